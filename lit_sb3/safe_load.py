"""What lit_sb3 loads without running code from the file, and how a user extends it (docs/guides/trust.md, "What
loading trusts"): :func:`allow` adds classes, functions or env packages to the allow-list once per process, as does
``LIT_SB3_ALLOW`` (comma-separated entries, for tools a user cannot add a line to); :func:`trusted` (or
``LIT_SB3_TRUST=1``) trusts every file, for code paths that cannot pass ``trusted=True``."""

from lit_sb3.common.allow_list import ALLOW_ENV, TRUST_ENV, Refused, allow, allowed_name, is_trusted, trusted
from lit_sb3.common.safe_load import loads

__all__ = ["ALLOW_ENV", "TRUST_ENV", "Refused", "allow", "allowed_name", "is_trusted", "loads", "trusted"]
