"""Each kind's contract as code: a Protocol (what a member offers) and a probe that builds a member
at tiny sizes and checks what the kind promises (`core.py`: the checks; one file per family of
kinds). The one probe serves three uses: a contract test generated over the whole catalogue
(tests/test_contracts.py), the trainer's build-time check of the parts a recipe chose, and
`python tools/catalog.py --check FILE.py` for an author's own component.
"""

from components.contracts import (  # noqa: F401  (the contracts)
    encoders,
    objectives,
    rl,
    test_contexts,
    worlds,
)
from components.contracts.core import (
    CONTRACTS,
    Broken,
    Contract,
    ContractError,
    check,
    check_parts,
)

__all__ = ["CONTRACTS", "Broken", "Contract", "ContractError", "check", "check_parts"]
