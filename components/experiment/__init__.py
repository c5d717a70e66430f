"""One experiment, run from Python as from the command line: compose, train, meta-test, write;
then resume it, load it, analyse it.

    from registry import compose
    from components.experiment import analyse, load, resume, run

    result = run(compose("focalpp.gin", env="sparse_point_robot", scale="tiny"), "runs/example")
    print(result.headline)
    resume("runs/example")   # a stopped run goes on exactly; a finished one is left as it is
    agent = load("runs/example")
    analyse("runs/example", ["embedding_variance"])

`run.py` trains a composition in fresh run directories (or resumes recorded ones), `facts.py`
says what a run is (run.json: its choices, code, machine, configuration digest and dataset),
`resume.py` checks that a stopped run can go on as it started, and `lifecycle.py` holds the calls
after `run` (`resume`, `load`, `analyse`); the command lines over them are
`components/cli/run.py` (`tools/run.py`) and `components/cli/analyze.py`.
"""

from components.experiment.lifecycle import analyse, load, resume
from components.experiment.run import Finished, run

__all__ = ["Finished", "analyse", "load", "resume", "run"]
