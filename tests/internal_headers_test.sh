#!/bin/sh
# internal/ headers are private to their library (cmake/rectrain.cmake): with the include root a
# library gives its users, its public header is found and its internal one is not.
# usage: internal_headers_test.sh CXX "ROOT;ROOT..." PUBLIC_HEADER INTERNAL_HEADER
set -u
cxx=$1 root=$2 public=$3 internal=$4
# The root list as CMake gives it (a;b;c) -> -Ia -Ib -Ic
includes=$(printf '%s' "$root" | tr ';' '\n' | sed 's/^/-I/' | tr '\n' ' ')
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf '#include "%s"\n' "$public" > "$dir/public.cc"
printf '#include "%s"\n' "$internal" > "$dir/internal.cc"
if ! "$cxx" -std=c++20 -E $includes -o /dev/null "$dir/public.cc" 2> "$dir/public.err"; then
  # A public header may include other libraries' public headers: only its own must resolve.
  if grep -q "$public: No such file" "$dir/public.err"; then
    echo "FAIL: $public is not under $root"; cat "$dir/public.err"; exit 1
  fi
fi
if "$cxx" -std=c++20 -E $includes -o /dev/null "$dir/internal.cc" 2> "$dir/internal.err"; then
  echo "FAIL: $internal is visible from $root"; exit 1
fi
grep -q "$internal: No such file" "$dir/internal.err" || { echo "FAIL: unexpected error"; cat "$dir/internal.err"; exit 1; }
echo "ok: $public visible, $internal private"
