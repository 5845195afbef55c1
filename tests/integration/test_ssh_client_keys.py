"""Client keys, read once per fleet (``client_keys``), against real sshd: a key the operator
fixes while the fleet retries is the one the next attempt offers, and the config's
IdentitiesOnly and IdentityFile still decide which keys are offered."""

from __future__ import annotations

import shutil

import pytest

from dltui.core import status as st

from .sshd import keygen
from .streaming import Streaming

pytestmark = pytest.mark.sshd


async def test_a_client_key_replaced_while_the_fleet_retries_is_offered_next(shared_lab, tmp_path, use_home):
    keygen(tmp_path / "stranger", "a key no node knows")
    home = use_home(shared_lab.make_home(tmp_path / "home", key=tmp_path / "stranger"))
    async with Streaming(["gpu01"]) as s:
        await s.until(lambda f: f.nodes["gpu01"].status == st.AUTH_FAILED, "gpu01 auth-failed")
        # the operator puts the right key in place (same names, new contents)
        shutil.copy(shared_lab.client_key, home / ".ssh" / "id_ed25519")
        shutil.copy(f"{shared_lab.client_key}.pub", home / ".ssh" / "id_ed25519.pub")
        await s.until_samples(["gpu01"], 1)
        assert s.state.nodes["gpu01"].status == st.OK


async def test_a_default_key_added_while_the_fleet_retries_is_offered_next(shared_lab, tmp_path, use_home):
    home = use_home(shared_lab.make_home(tmp_path / "home"))
    ssh_dir = home / ".ssh"
    (ssh_dir / "id_ed25519").rename(tmp_path / "aside")  # no key at all yet
    (ssh_dir / "id_ed25519.pub").unlink()
    async with Streaming(["gpu01"]) as s:
        await s.until(lambda f: f.nodes["gpu01"].status == st.AUTH_FAILED, "gpu01 auth-failed")
        shutil.copy(tmp_path / "aside", ssh_dir / "id_ecdsa")  # another default name
        await s.until_samples(["gpu01"], 1)
        assert s.state.nodes["gpu01"].status == st.OK


async def test_identities_only_offers_the_config_key_and_not_the_default_one(shared_lab, tmp_path, use_home):
    """IdentitiesOnly with the right key in IdentityFile connects; with a stranger's key there,
    the (right) default key is not offered: auth fails."""
    home = use_home(shared_lab.make_home(tmp_path / "home"))
    config = home / ".ssh" / "config"
    plain = config.read_text()
    shutil.copy(shared_lab.client_key, tmp_path / "fleet-key")
    config.write_text(f"Host *\n  IdentitiesOnly yes\n  IdentityFile {tmp_path}/fleet-key\n" + plain)
    async with Streaming(["gpu01"]) as s:
        await s.until_samples(["gpu01"], 1)
        assert s.state.nodes["gpu01"].status == st.OK
    keygen(tmp_path / "stranger", "a key no node knows")
    config.write_text(f"Host *\n  IdentitiesOnly yes\n  IdentityFile {tmp_path}/stranger\n" + plain)
    async with Streaming(["gpu01"]) as s:
        await s.until(lambda f: f.nodes["gpu01"].status == st.AUTH_FAILED, "gpu01 auth-failed")
