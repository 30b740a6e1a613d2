#!/usr/bin/env bash
# Install Slurm and MUNGE from the system's packages for the Slurm test (tests/e2e/test_slurm_sharded_eval.py),
# which runs the documented sbatch scripts (examples/slurm/) on a real single-node cluster.
# Quick when they are already installed; safe to run repeatedly; called by `make test`.
# Only the programs are installed: no daemon is started or enabled here. The test's fixture
# starts munged, slurmctld and slurmd itself, on 127.0.0.1 with every file in a temporary
# folder, and stops them afterwards; `maps` itself never needs Slurm.
set -euo pipefail

have_slurm() {
  local name
  for name in munged slurmctld slurmd sbatch scancel scontrol squeue; do
    command -v "$name" >/dev/null 2>&1 || [ -x "/usr/sbin/$name" ] || return 1
  done
}

if have_slurm; then
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  # Not Debian/Ubuntu: leave it to the user; the Slurm test says how (and fails in CI).
  echo "setup_slurm: no apt-get here; install Slurm (slurmctld, slurmd, the client commands) and munge yourself to run tests/e2e/test_slurm_sharded_eval.py" >&2
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
echo "setup_slurm: installing Slurm and MUNGE system-wide (${SUDO:+sudo }apt-get install slurm-wlm munge: about 15 MB, no daemon started or enabled) for the Slurm test (tests/e2e/test_slurm_sharded_eval.py); \`maps\` itself never needs them" >&2

# No recommends: the metapackage's plugins for accounting databases, HDF5, InfluxDB, IPMI...
# are never used by a single-node test cluster.
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
# A package's own start-up scripts may have started the system's daemons (outside containers):
# the test runs its own, so leave the system's as the package left them.
slurmctld -V
