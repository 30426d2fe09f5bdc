# The disk under a benchmark, sourced by the scripts that measure the write path (issue 44:
# "report each figure with the machine's synchronous-write time beside it").
#
#   sync_write_ms DIR          the mean of 2,000 synchronous 4 KiB writes in DIR, in ms
#   slow_disk IOPS DIR         a cgroup whose writes to DIR's device are capped at IOPS a second
#                              (a slower disk: each synchronous write waits its turn); prints
#                              the cgroup's directory
#   in_cgroup CGROUP CMD...    becomes CMD inside CGROUP (its children too): it replaces the
#                              shell it runs in, so call it in a subshell or with `&`
#   drop_cgroup CGROUP         removes it once its processes are gone
#
# The cap is the kernel's block throttle: cgroup v1's blkio.throttle.write_iops_device, or
# cgroup v2's io.max where the io controller is enabled. Neither there (or not root): the
# benchmark stops with the reason, never runs on the fast disk and calls it slow.

sync_write_ms() {
  local f="$1/.sync-write-probe" secs
  secs=$(dd if=/dev/zero of="$f" bs=4k count=2000 oflag=dsync 2>&1 | awk '/copied/ { print $(NF-3) }')
  rm -f "$f"
  python3 -c "print(f'{$secs / 2:.3f}')"
}

slow_disk() {
  local iops=$1 dir=$2 dev cg
  dev=$(findmnt -no MAJ:MIN -T "$dir" | head -1 | tr -d ' ')
  [[ $dev =~ ^[0-9]+:[0-9]+$ ]] || { echo "slow_disk: no block device under $dir ($dev)" >&2; return 1; }
  # A partition's throttle belongs to its whole disk.
  if [ -e "/sys/dev/block/$dev/partition" ]; then
    dev=$(cat "/sys/dev/block/$dev/../dev")
  fi
  if [ -w /sys/fs/cgroup/blkio ] && [ -e /sys/fs/cgroup/blkio/blkio.throttle.write_iops_device ]; then
    cg=/sys/fs/cgroup/blkio/countersign-slow-disk-$$
    mkdir -p "$cg"
    echo "$dev $iops" > "$cg/blkio.throttle.write_iops_device"
  elif grep -qw io /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
    cg=/sys/fs/cgroup/countersign-slow-disk-$$
    mkdir -p "$cg"
    echo "$dev wiops=$iops" > "$cg/io.max"
  else
    echo "slow_disk: no block throttle here (cgroup v1 blkio or v2 io, as root)" >&2
    return 1
  fi
  echo "$cg"
}

in_cgroup() {
  local cg=$1
  shift
  exec bash -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cg" "$@"
}

drop_cgroup() {
  [ -n "${1:-}" ] && [ -d "$1" ] && rmdir "$1" 2>/dev/null || true
}
