"""SSH, as ssh(1) does it: the SSH config, ProxyJump, keys and agent, checked host keys, and
never a password prompt. Public, shared by the fleet transport, the actions and the burn-in:

- ``options``: what the command line and the config file say about reaching nodes;
- ``config`` (+ ``config_slice``): the SSH config read per node; ``known_hosts``: host keys;
- ``connector``: opens one hop (``Connector.open`` -> ``Hop``); ``jump_pool``: one shared
  connection per jump route; ``errors``: any failure as a status word with a plain reason;
- ``sessions``: the session runner, the one place a node's connection is opened through its
  jump route (and a dead jump blamed); every user below goes through it;
- ``fleet``: the probe streamed over each node's connection (``SshFleet``);
- ``commands``: the node-command contract over SSH (``transport.command``): on the fleet's
  own connections for the dashboard (``FleetCommands``), or a connection per node without
  one (``SshCommands``); the actions and the burn-in send every command through it.
"""
