"""What a run writes while it trains: its folder and atomic writes (`run_dir.py`), its record
(`run_record.py`), checkpoints (`checkpoint.py`), the metrics log (`metrics.py`), console lines
and progress (`console.py`, `progress.py`), and figures (`figures.py`, drawn by analyses and
reports alike). Nothing here reads a report: reports are `components/reports/`, above."""
