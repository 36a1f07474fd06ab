"""Helpers shared by the tests: paths of the repository and the shared corpus, the CLI runner, generators
of MSCCL XML programs (`xmlgen`), their mutations (`xml_mutations`) and random schedules (`random_schedules`).

`tests/` is on `sys.path` (pytest puts the directory of the root `conftest.py` there), so tests import
`from helpers.xmlgen import ...` wherever they live.
"""
