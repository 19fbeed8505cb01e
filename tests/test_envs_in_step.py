"""pyproject.toml (ranges), requirements.txt (the tested pins) and envs/*.yaml (conda)
name the same Python packages, and every pin lies in pyproject's range."""
import tomllib

import yaml
from packaging.requirements import Requirement


def _requirements_pins(repo):
    pins = {}
    for line in (repo / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, ver = line.partition("==")
            pins[name.lower()] = ver or None
    return pins


def test_conda_env_matches_requirements(repo):
    pins = _requirements_pins(repo)
    env = yaml.safe_load((repo / "envs" / "numaplace.yaml").read_text())
    conda = {}
    for dep in env["dependencies"]:
        name, _, ver = dep.partition("=")
        conda[name.lower()] = ver or None
    conda["matplotlib"] = conda.pop("matplotlib-base")
    for name, ver in pins.items():
        assert name in conda, f"{name} is in requirements.txt but not in envs/numaplace.yaml"
        assert conda[name] == ver, f"{name}: requirements.txt {ver} vs envs/numaplace.yaml {conda[name]}"


def test_requirements_pin_what_pyproject_asks_for(repo):
    project = tomllib.loads((repo / "pyproject.toml").read_text())["project"]
    wanted = [Requirement(r) for r in project["dependencies"] + project["optional-dependencies"]["test"]]
    pins = _requirements_pins(repo)
    assert sorted(r.name.lower() for r in wanted) == sorted(pins), \
        "pyproject.toml's dependencies (+ test extra) and requirements.txt name different packages"
    for r in wanted:
        pin = pins[r.name.lower()]
        assert pin and r.specifier.contains(pin), f"{r.name}: requirements.txt pins {pin}, pyproject asks {r.specifier}"
