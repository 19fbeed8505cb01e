"""Inside a numa-vm guest: install numaplace's wheel (as guest_runs.py does), print the
platform file of the guest with `numaplace platform detect`, and copy the guest's node
sysfs (what `platform: auto` reads) for the host to plan from.

    python3 guest_detect.py WHEEL NAME OUTDIR

OUTDIR/<NAME>.yaml  the detected platform file (stdout of the command)
OUTDIR/detect.json  {"rc", "stderr", "numactl_hardware"}
OUTDIR/sysfs/devices/system/node/node<N>/{cpulist,distance,meminfo}
"""
import json
import os
import shutil
import subprocess
import sys

from guest_runs import install_wheel, sh  # the script's folder is on sys.path


def main(wheel, name, outdir):
    open(os.path.join(outdir, "started"), "w").close()
    python = install_wheel(wheel)
    p = subprocess.run([python, "-m", "numaplace", "platform", "detect", "--name", name],
                       capture_output=True, text=True)
    with open(os.path.join(outdir, f"{name}.yaml"), "w") as f:
        f.write(p.stdout)
    src = "/sys/devices/system/node"
    for d in sorted(os.listdir(src)):
        if d.startswith("node") and d[4:].isdigit():
            os.makedirs(os.path.join(outdir, "sysfs", "devices", "system", "node", d))
            for f in ("cpulist", "distance", "meminfo"):
                shutil.copyfile(os.path.join(src, d, f), os.path.join(outdir, "sysfs", "devices", "system", "node", d, f))
    with open(os.path.join(outdir, "detect.json"), "w") as f:
        json.dump({"rc": p.returncode, "stderr": p.stderr[-4000:],
                   "numactl_hardware": sh("numactl", "--hardware")}, f, indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:4])
