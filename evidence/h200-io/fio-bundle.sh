#!/bin/bash
# Packs this machine's fio (Debian 12's fio 3.33) with the shared libraries it links (glibc aside) into DIR, for a
# host without fio such as the H200 GPU host; bin/fio is a wrapper that sets LD_LIBRARY_PATH. fio links ceph, gluster
# and ICU (79 MB unpacked), so the bundle travels as DIR.tar.xz (about 22 MB; the device carry limit is 64 MiB).
#   bash evidence/h200-io/fio-bundle.sh .fio-bundle      # writes .fio-bundle.tar.xz (git-ignored): carry that file
set -euo pipefail
D=${1:?usage: fio-bundle.sh DIR}
command -v fio >/dev/null || apt-get install -y -qq fio >/dev/null
rm -rf "$D"; mkdir -p "$D/bin" "$D/lib" "$D/real"
cp "$(command -v fio)" "$D/real/fio"
ldd "$D/real/fio" | awk '$3 ~ /^\// {print $3}' | sort -u \
  | grep -v -E '/(libc|libm|libresolv|libpthread|libdl|ld-linux[^/]*)\.so' | xargs -I{} cp -L {} "$D/lib/"
printf '#!/bin/sh\nH=$(cd "$(dirname "$0")/.." && pwd)\nLD_LIBRARY_PATH="$H/lib" exec "$H/real/fio" "$@"\n' > "$D/bin/fio"
chmod +x "$D/bin/fio"
"$D/bin/fio" --version
tar -C "$D" -cJf "$D.tar.xz" . && rm -rf "$D"
du -sh "$D.tar.xz"
