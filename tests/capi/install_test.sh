#!/usr/bin/env bash
# The installed tree works on its own: `cmake --install` into a temporary
# prefix, then examples/c/generate.c built against the installed header and
# library (pkg-config, pkg-config --static, find_package(ferrite)) and run with
# only the prefix on LD_LIBRARY_PATH and in a clean environment, must print the
# stories260K greedy text of shared/models/stories260K.greedy200.txt; so must
# the installed `ferrite run`. The completions and the man page parse and
# list the commands; `cpack -G DEB` makes a package whose files, extracted,
# run the same way and whose Depends names the libraries' Debian packages.
#   install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
shared=${FERRITE_SHARED:-$src/../shared}
model=$shared/models/stories260K.gguf
golden=$shared/models/stories260K.greedy200.txt
for f in "$model" "$golden"; do
  if [ ! -f "$f" ]; then
    echo "FAIL: shared test data missing: $f" >&2
    exit 1
  fi
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ferrite-install-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "-- $*"; }

step "cmake --install into $prefix"
cmake --install "$build" --prefix "$prefix" > "$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install"; }
libdir=$(dirname "$(find "$prefix" -name libferrite.so.1 -print -quit)")
[ -n "$libdir" ] && [ -d "$libdir" ] || fail "no libferrite.so.1 installed"
for f in bin/ferrite include/ferrite.h; do [ -f "$prefix/$f" ] || fail "$f not installed"; done
for f in libferrite.so libferrite.a pkgconfig/ferrite.pc cmake/ferrite/ferriteConfig.cmake; do
  [ -e "$libdir/$f" ] || fail "$f not installed in $libdir"
done
soname=$(readelf -d "$libdir/libferrite.so.1" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = libferrite.so.1 ] || fail "SONAME is '$soname'"
if readelf -d "$prefix/bin/ferrite" "$libdir/libferrite.so.1" | grep -E 'R(UN)?PATH' | grep -q "$build"; then
  fail "an installed file keeps a run path into the build tree"
fi
exported=$(nm -D --defined-only "$libdir/libferrite.so.1" | awk '$3 !~ /^ferrite_/ && $3 !~ /^FERRITE_/ {print $3}')
[ -z "$exported" ] || fail "libferrite.so exports more than ferrite_*: $(echo "$exported" | head -3)"

# Runs a program with only the prefix's libraries and a minimal environment.
run_clean() { env -i PATH=/usr/bin:/bin HOME="$tmp" LD_LIBRARY_PATH="$libdir" "$@"; }
check_text() {  # FILE WHAT: the output is a long prefix of the golden text
  local n
  n=$(wc -c < "$1")
  [ "$n" -gt 300 ] || fail "$2 printed only $n bytes"
  cmp -s -n "$n" "$1" "$golden" || { head -c 400 "$1"; echo; fail "$2: the text differs from $golden"; }
}

export PKG_CONFIG_PATH=$libdir/pkgconfig
step "pkg-config: shared library"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror "$src/examples/c/generate.c" $(pkg-config --cflags --libs ferrite) -o "$tmp/gen_pc"
run_clean ldd "$tmp/gen_pc" | grep "libferrite.so.1 => $libdir/" > /dev/null || fail "gen_pc does not load the prefix's libferrite"
run_clean "$tmp/gen_pc" "$model" "" 120 > "$tmp/pc.txt" 2> "$tmp/pc.err" || { cat "$tmp/pc.err"; fail "gen_pc"; }
check_text "$tmp/pc.txt" "the pkg-config build"

step "pkg-config --static: libferrite.a"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror "$src/examples/c/generate.c" $(pkg-config --cflags ferrite) \
  -L"$libdir" -Wl,-Bstatic -lferrite -Wl,-Bdynamic $(pkg-config --libs --static ferrite | sed 's/-lferrite\b//') \
  -o "$tmp/gen_static"
! ldd "$tmp/gen_static" | grep -q libferrite || fail "gen_static links libferrite.so"
run_clean "$tmp/gen_static" "$model" "" 120 > "$tmp/static.txt" 2> "$tmp/static.err" || { cat "$tmp/static.err"; fail "gen_static"; }
check_text "$tmp/static.txt" "the static build"

step "find_package(ferrite)"
cmake -S "$src/examples/c" -B "$tmp/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
  > "$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; fail "configuring examples/c with find_package"; }
cmake --build "$tmp/cmake-build" > "$tmp/cmake-build.log" 2>&1 || { cat "$tmp/cmake-build.log"; fail "building examples/c"; }
run_clean "$tmp/cmake-build/generate" "$model" "" 120 > "$tmp/cmake.txt" 2> "$tmp/cmake.err" || { cat "$tmp/cmake.err"; fail "cmake-built generate"; }
check_text "$tmp/cmake.txt" "the find_package build"

step "installed ferrite run"
run_clean "$prefix/bin/ferrite" run "$model" -p "" -n 120 --temp 0 > "$tmp/run.txt" 2> "$tmp/run.err" || { cat "$tmp/run.err"; fail "ferrite run"; }
check_text "$tmp/run.txt" "the installed ferrite run"

step "completions and man page"
share=$prefix/share
commands=$("$prefix/bin/ferrite" help | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p')
[ "$(echo "$commands" | wc -l)" -gt 10 ] || fail "ferrite help lists too few commands"
got=$(bash -c 'source "$1"; COMP_WORDS=(ferrite run --tem); COMP_CWORD=2; _ferrite; echo "${COMPREPLY[*]}"' _ \
  "$share/bash-completion/completions/ferrite")
[ "$got" = "--temp --temperature" ] || fail "bash completes 'ferrite run --tem' as '$got'"
for c in $commands; do
  grep -q "^    $c) opts=" "$share/bash-completion/completions/ferrite" || fail "bash completion lacks $c"
  grep -q "^\.SH \"FERRITE $(echo "$c" | sed 's/-/\\\\-/g')\"" "$share/man/man1/ferrite.1" || fail "man page lacks $c"
done
warnings=$(groff -man -ww -z "$share/man/man1/ferrite.1" 2>&1)
[ -z "$warnings" ] || fail "groff: $warnings"
for shell in zsh fish; do
  if ! command -v $shell > /dev/null; then
    [ "${CI:-}" != true ] || fail "$shell is not installed (scripts/setup installs it)"
    echo "   ($shell not installed: its script not checked)"
    continue
  fi
done
if command -v zsh > /dev/null; then zsh -n "$share/zsh/vendor-completions/_ferrite" || fail "zsh script"; fi
if command -v fish > /dev/null; then
  fish --no-execute "$share/fish/vendor_completions.d/ferrite.fish" || fail "fish script"
  got=$(fish -c "source $share/fish/vendor_completions.d/ferrite.fish; complete -C 'ferrite run --tem'" | cut -f1 | tr '\n' ' ')
  [ "$got" = "--temp --temperature " ] || fail "fish completes 'ferrite run --tem' as '$got'"
fi

step "cpack -G DEB"
# Unstripped and uncompressed here (a third of the time; the same files and Depends).
(cd "$build" && cpack -G DEB -B "$tmp/deb" -D CPACK_STRIP_FILES=OFF -D CPACK_DEBIAN_COMPRESSION_TYPE=none \
  > "$tmp/cpack.log" 2>&1) || { cat "$tmp/cpack.log"; fail "cpack"; }
deb=$(ls "$tmp"/deb/ferrite_*.deb)
depends=$(dpkg-deb -f "$deb" Depends)
for p in libc6 libstdc++6 libpcre2-8-0 libutf8proc2 libcurl4; do
  echo "$depends" | grep -q "\b$p\b" || fail "Depends lacks $p: $depends"
done
dpkg-deb -x "$deb" "$tmp/root"
[ -x "$tmp/root/usr/bin/ferrite" ] && [ -e "$tmp/root/usr/include/ferrite.h" ] || fail "the package lacks files"
env -i PATH=/usr/bin:/bin HOME="$tmp" "$tmp/root/usr/bin/ferrite" run "$model" -p "" -n 120 --temp 0 \
  > "$tmp/deb.txt" 2> "$tmp/deb.err" || { cat "$tmp/deb.err"; fail "the packaged ferrite run"; }
check_text "$tmp/deb.txt" "the packaged ferrite run"
echo "PASS"
