"""What a reader gets from finished runs: the runs found, checked and grouped (`runs.py`), the
compact records of studies (`records.py`, `builds.py`: what each run built), the readings and
intervals every table shares (`readings.py`, `intervals.py`, `tables.py`), the paper's numbers
(`paper.py`), the report every registered section writes (`report.py`, `sections/`), the
headline (`headline.py`), whether a study still builds its record (`drift.py`), and the
contracts of analyses and report sections (`contracts.py`).

It sits above the studies (it reads a sweep's index) and the contracts (it checks each section
before it runs); what a run writes while it trains is `components/outputs/`, below."""
