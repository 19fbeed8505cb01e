"""envs/*.yaml (conda) and requirements.txt (pip) pin the same Python packages."""
import yaml


def test_conda_env_matches_requirements(repo):
    pins = {}
    for line in (repo / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, ver = line.partition("==")
            pins[name.lower()] = ver or None
    env = yaml.safe_load((repo / "envs" / "numaplace.yaml").read_text())
    conda = {}
    for dep in env["dependencies"]:
        name, _, ver = dep.partition("=")
        conda[name.lower()] = ver or None
    conda["matplotlib"] = conda.pop("matplotlib-base")
    for name, ver in pins.items():
        assert name in conda, f"{name} is in requirements.txt but not in envs/numaplace.yaml"
        assert conda[name] == ver, f"{name}: requirements.txt {ver} vs envs/numaplace.yaml {conda[name]}"
