"""What lit_sb3 loads without running code from the file, and how a user extends it (see README "What loading
trusts"): :func:`allow` adds classes, functions or env packages to the allow-list once per process; :func:`trusted`
(or ``LIT_SB3_TRUST=1``) trusts every file, for code paths that cannot pass ``trusted=True``."""

from lit_sb3.common.safe_load import TRUST_ENV, Refused, allow, allowed_name, is_trusted, loads, trusted

__all__ = ["TRUST_ENV", "Refused", "allow", "allowed_name", "is_trusted", "loads", "trusted"]
