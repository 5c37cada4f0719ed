# Sourced by the device scripts: $out (from $OUT), and a loader path with the carried libraries
# (.devlibs, scripts/device/collect_devlibs.sh) and the device's own cuBLASLt and NCCL; prints what
# the carried megasim does not find.
out=${OUT:-/tmp/megasim-device}
mkdir -p "$out"
libdirs=$(find /usr/local /usr/lib /opt -xdev \( -name 'libcublasLt.so.13' -o -name 'libnccl.so.2' \) -printf '%h\n' \
          2>/dev/null | sort -u | tr '\n' ':')
export LD_LIBRARY_PATH="$PWD/.devlibs:${libdirs}${LD_LIBRARY_PATH:-}"
ldd build-cuda/cli/megasim | grep -E "not found|cublas|nccl"
