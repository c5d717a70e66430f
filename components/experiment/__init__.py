"""One experiment, run from Python as from the command line: compose, train, meta-test, write.

    from registry import compose
    from components.experiment import run

    result = run(compose("focalpp.gin", env="sparse_point_robot", scale="tiny"), "runs/example")
    print(result.headline)

`run.py` trains a composition in fresh run directories (or resumes recorded ones), `record.py`
says what a run is (run.json: its choices, code, machine, configuration digest and dataset),
and `resume.py` checks that a stopped run can go on as it started; the command line over them
is `components/cli/run.py` (`tools/run.py`).
"""

from components.experiment.run import Finished, run

__all__ = ["Finished", "run"]
