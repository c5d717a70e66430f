"""Results as a reader gets them: the runs a report reads, found, checked and grouped
(`runs.py`), and the report that every registered section writes of them (`report.py`).

It sits above the studies (it reads a sweep's index) and the contracts (it checks each section
before it runs); the sections themselves, the compact records and the cells they share are
parts in `components/reporting/`.
"""
