#!/usr/bin/env bash
# The consumer check: pack the tarball, install it into a scratch project outside the repository, and use it
# as a service would on the Node that is first on PATH: a plain `node` ES-module script delegates once offline,
# the README's embedding examples run as written, a strict TypeScript consumer typechecks against the
# installed declarations, and the installed `actorzero` command answers --help.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

echo "consumer check on node $(node -v), in $scratch"
# Versions of what the consumer adds itself, taken from the repository's own install.
ver() { node -p "require('$repo/node_modules/$1/package.json').version"; }
extras=("fast-check@$(ver fast-check)" "zod@$(ver zod)" "typescript@$(ver typescript)" "@types/node@$(ver @types/node)")

tarball="$(cd "$repo" && npm pack --silent --pack-destination "$scratch" | tail -n 1)"
# What the tarball holds: under 2 MB unpacked (1.1 MB with approvals and resume, 1.55 MB with windows, budgets,
# fixtures and the MCP and A2A servers; the bound catches what should
# not ship, as do the lines below), and no test, benchmark, CI, source map or screenshot.
tar -tzf "$scratch/$tarball" > "$scratch/tarball.txt"
mkdir "$scratch/unpacked" && tar -xzf "$scratch/$tarball" -C "$scratch/unpacked"
unpacked="$(find "$scratch/unpacked" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')"
rm -rf "$scratch/unpacked"
echo "tarball $(wc -c < "$scratch/$tarball") bytes, $unpacked bytes unpacked, $(wc -l < "$scratch/tarball.txt") files"
if [ "$unpacked" -ge 2000000 ]; then echo "consumer check: the package is 2 MB or more unpacked" >&2; exit 1; fi
if grep -E "\.(map|png)$" "$scratch/tarball.txt"; then echo "consumer check: the tarball ships source maps or screenshots" >&2; exit 1; fi
if ! grep -q "^package/dist/server/web/index.html$" "$scratch/tarball.txt"; then echo "consumer check: the tarball lacks the web page" >&2; exit 1; fi
if grep -E "^package/(test|bench|\.ci)/" "$scratch/tarball.txt"; then echo "consumer check: the tarball ships tests, benchmarks or CI" >&2; exit 1; fi
cp "$repo/.ci/consumer/"* "$repo/examples/embedOffline.mjs" "$repo/examples/embedOpenAI.mjs" "$scratch/"
cd "$scratch"
printf '{ "name": "consumer", "private": true, "type": "module" }\n' > package.json
npm install --no-audit --no-fund "./$tarball" "${extras[@]}" 2>&1 | tee install.log
if grep -q EBADENGINE install.log; then echo "consumer check: the install warned EBADENGINE" >&2; exit 1; fi

# (a) plain Node, no loader: one delegation offline, checked by the script.
node consumer.mjs
# The README's offline example prints what happened; the OpenAI one, with no key, prints why it failed.
node embedOffline.mjs | tee offline.out
grep -q "^A0 completed" offline.out
env -u OPENAI_API_KEY node embedOpenAI.mjs | tee openai.out
grep -q "^failed: model_error" openai.out
# (b) a strict TypeScript consumer typechecks against the published declarations (skipLibCheck off).
# xstate's own declarations do not compile under exactOptionalPropertyTypes (an upstream matter, reached
# because Runtime.actor returns an xstate actor ref); any other error, above all one in actorzero's, fails.
npx --no-install tsc -p tsconfig.json > tsc.out || true
cat tsc.out
if grep -E "error TS" tsc.out | grep -vq "^node_modules/xstate/"; then echo "consumer check: the strict consumer does not typecheck" >&2; exit 1; fi
# (c) the installed command runs compiled JavaScript.
npx --no-install actorzero --help | tee help.out
grep -qi "usage" help.out
echo "consumer check: passed"
