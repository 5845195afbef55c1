"""asyncssh, imported for all of dltui in this one place, without its import-time noise.

cryptography 51 deprecated DSA, and asyncssh (2.24.1) names the DSA key classes at import
(``asyncssh/crypto/misc.py``, ``asyncssh/crypto/dsa.py``): every dltui command that can reach
a node printed ``CryptographyDeprecationWarning: DSA is deprecated…`` twice on stderr, above
its own answer and in every cron mail, with nothing an operator could do about it. It is
silenced here narrowly: that one category, raised from asyncssh's own modules, only while
asyncssh imports. Remove this when an asyncssh release stops touching DSA at import (check:
``python -W error -c 'import asyncssh'`` prints nothing). Anything dltui itself warns about,
and any other warning, still reaches stderr.

Every other module takes ``asyncssh`` from here (ruff's TID251 refuses a direct import), so
whichever command imports it first, the filter is in place.
"""

import warnings

from cryptography.utils import CryptographyDeprecationWarning

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", category=CryptographyDeprecationWarning, module=r"asyncssh(\.|$)")
    import asyncssh
    from asyncssh.config import SSHClientConfig  # already imported by asyncssh itself
    from asyncssh.pattern import WildcardPatternList

__all__ = ["SSHClientConfig", "WildcardPatternList", "asyncssh"]
