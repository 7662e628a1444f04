#!/usr/bin/env bash
# Builds the test bed's binaries from the Go module proxy into a cache keyed
# by their versions (outside the repository), skipping what is cached:
#   ${K3SF_CACHE:-~/.cache/k3s_flux}/bin/<tool>-<version>/<tool>
# Usage: tests/tools/build.sh [tool ...]   (default: all but the optional ones)
# Optional, built only when named: helm (the benchmarks' baseline), kubectl (for you),
# staticcheck and goimports (make lint).
# Test tools only: none of them is linked into the collection.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${K3SF_CACHE:-$HOME/.cache/k3s_flux}/bin"
source "$here/../bed/versions.env"
export GOFLAGS="${GOFLAGS:-} -buildvcs=false" CGO_ENABLED=0

# build_tool NAME VERSION DIR PACKAGE [go build args...]
build_tool() {
  local name=$1 version=$2 dir=$3 pkg=$4
  shift 4
  local dest="$cache/$name-$version/$name"
  if [ -x "$dest" ]; then
    echo "cached  $name $version"
    return
  fi
  echo "build   $name $version ..."
  local start=$SECONDS
  mkdir -p "$(dirname "$dest")"
  (cd "$dir" && go build -trimpath "$@" -o "$dest.tmp" "$pkg")
  mv "$dest.tmp" "$dest"
  echo "built   $name $version in $((SECONDS - start))s ($(du -m "$dest" | cut -f1) MB)"
}

# install_tool NAME VERSION PACKAGE@VERSION: go install, with the tool's own
# go.mod, for tools that build as published.
install_tool() {
  local name=$1 version=$2 pkg=$3
  local dest="$cache/$name-$version"
  if [ -x "$dest/$name" ]; then
    echo "cached  $name $version"
    return
  fi
  echo "build   $name $version ..."
  local start=$SECONDS
  mkdir -p "$dest"
  GOBIN="$dest/bin.tmp" go install -trimpath -ldflags "-s -w" "$pkg"
  mv "$dest/bin.tmp/$name" "$dest/$name" && rmdir "$dest/bin.tmp"
  echo "built   $name $version in $((SECONDS - start))s"
}

tools=("$@")
sel() { local t=$1; [ ${#tools[@]} -eq 0 ] && return 0; [[ " ${tools[*]} " == *" $t "* ]]; }
named() { [[ " ${tools[*]:-} " == *" $1 "* ]]; }

# copy_module_dir VERSION_DIR MODULE@VERSION SUBDIR DEST: files the test bed
# reads at run time (CRDs, manifests, kwok stages), from the module cache.
copy_module_dir() {
  local dir=$1 modver=$2 sub=$3 dest=$4
  [ -d "$dest" ] && return
  local src
  src="$(cd "$dir" && go mod download -json "$modver" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')/$sub"
  mkdir -p "$(dirname "$dest")"
  cp -r "$src" "$dest.tmp"
  chmod -R u+w "$dest.tmp"
  mv "$dest.tmp" "$dest"
}

named helm && install_tool helm "v$HELM_VERSION" "helm.sh/helm/v3/cmd/helm@v$HELM_VERSION"
# The Go linters make lint runs.
named staticcheck && install_tool staticcheck "v$STATICCHECK_VERSION" "honnef.co/go/tools/cmd/staticcheck@v$STATICCHECK_VERSION"
named goimports && install_tool goimports "v$GOIMPORTS_VERSION" "golang.org/x/tools/cmd/goimports@v$GOIMPORTS_VERSION"
sel etcd && build_tool etcd "v$ETCD_VERSION" "$here/etcd" go.etcd.io/etcd/server/v3 -ldflags "-s -w"

if sel kwok; then
  install_tool kwok "v$KWOK_VERSION" "sigs.k8s.io/kwok/cmd/kwok@v$KWOK_VERSION"
  dest="$cache/kwok-v$KWOK_VERSION"
  (cd "$here/k8s" && copy_module_dir . "sigs.k8s.io/kwok@v$KWOK_VERSION" kustomize/stage "$dest/stage")
fi

export GOTOOLCHAIN="$TOOLS_TOOLCHAIN"
if sel flux-operator; then
  dest="$cache/flux-operator-v$FLUX_OPERATOR_VERSION"
  module="github.com/controlplaneio-fluxcd/flux-operator@v$FLUX_OPERATOR_VERSION"
  if [ ! -x "$dest/flux-operator" ]; then
    # web/embed.go embeds web/dist/*, which the published module lacks, and
    # go build may not overlay files in the module cache: build from a copy
    # of the module (kept in the cache, never in this repository) with a
    # placeholder page, through a temporary go.mod that replaces it.
    src="$dest/src"
    rm -rf "$src"
    copy_module_dir "$here/fluxoperator" "$module" . "$src"
    mkdir -p "$src/web/dist"
    printf '<!doctype html><title>flux-operator (test bed)</title>\n' >"$src/web/dist/index.html"
    cp "$here/fluxoperator/go.mod" "$dest/build.mod"
    cp "$here/fluxoperator/go.sum" "$dest/build.sum"
    printf '\nreplace github.com/controlplaneio-fluxcd/flux-operator => %s\n' "$src" >>"$dest/build.mod"
    build_tool flux-operator "v$FLUX_OPERATOR_VERSION" "$here/fluxoperator" github.com/controlplaneio-fluxcd/flux-operator/cmd/operator \
      -modfile "$dest/build.mod" -ldflags "-s -w -X main.VERSION=$FLUX_OPERATOR_VERSION"
    rm -rf "$src" "$dest/build.mod" "$dest/build.sum"
  else
    echo "cached  flux-operator v$FLUX_OPERATOR_VERSION"
  fi
  for sub in config/crd/bases config/data; do
    copy_module_dir "$here/fluxoperator" "$module" "$sub" "$dest/${sub#config/}"
  done
fi
sel source-controller && build_tool source-controller "v$FLUX_CONTROLLERS_VERSION" "$here/sourcecontroller" github.com/fluxcd/source-controller -mod=mod -ldflags "-s -w"
sel kustomize-controller && build_tool kustomize-controller "v$FLUX_CONTROLLERS_VERSION" "$here/kustomizecontroller" github.com/fluxcd/kustomize-controller -mod=mod -ldflags "-s -w"
sel gitserver && build_tool gitserver "v$GITSERVER_VERSION" "$here/gitserver" . -ldflags "-s -w"
sel versitygw && install_tool versitygw "v$VERSITYGW_VERSION" "github.com/versity/versitygw/cmd/versitygw@v$VERSITYGW_VERSION"

# k3s's source, as the Go module proxy serves it, copied once (the module cache is read-only) with
# the manifests its scripts/build embeds.
k3s_src="$cache/k3s-src-$K3S_MODULE_VERSION"
k3s_source() {
  [ -d "$k3s_src" ] && return
  copy_module_dir "$here/k8s" "github.com/k3s-io/k3s@$K3S_MODULE_VERSION" . "$k3s_src"
  cp "$k3s_src"/manifests/*.yaml "$k3s_src/pkg/deploy/embed/"
}

# k3s_go_build DEST PACKAGE LDFLAGS: go build in k3s's module as its scripts/build builds k3s (its
# Go, CGO, its tags), so that every build here shares one set of compiled packages.
k3s_go_build() {
  local dest=$1 pkg=$2 ld=$3
  (cd "$k3s_src" && GOTOOLCHAIN="$K3S_GOLANG" CGO_ENABLED=1 GOFLAGS="-buildvcs=false -mod=mod" go build -trimpath \
    -tags "static_build libsqlite3 ctrd netcgo osusergo providerless urfave_cli_no_docs sqlite_omit_load_extension" \
    -ldflags "$ld" -o "$dest" "$pkg" 2> >(grep -Ev "statically linked applications requires at runtime|^/usr/bin/ld: [^ ]+: in function" >&2))
}

# build_k3s VERSION: k3s's multicall binary (server, agent, etcd-snapshot, token, ...) from its
# module, as its scripts/build does: the manifests embedded (pkg/deploy/embed), CGO for SQLite,
# static, its build tags, and its version variables set (scripts/version.sh reads GitHub for
# them, so they are given here); its install.sh beside it. Both versions share the compiled
# packages: the second build only links.
build_k3s() {
  local version=$1
  local dest="$cache/k3s-$version"
  if [ -x "$dest/k3s" ] && [ -f "$dest/install.sh" ]; then
    echo "cached  k3s $version"
    return
  fi
  echo "build   k3s $version (from k3s-io/k3s@$K3S_MODULE_VERSION) ..."
  local start=$SECONDS
  k3s_source
  local commit=${K3S_MODULE_VERSION##*-} pkg=github.com/k3s-io/k3s
  local ld="-s -w -X $pkg/pkg/version.Version=$version -X $pkg/pkg/version.GitCommit=${commit:0:8}"
  ld+=" -X $pkg/pkg/version.UpstreamGolang=$K3S_GOLANG"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $p.gitVersion=$version -X $p.gitCommit=$commit -X $p.gitTreeState=clean"
  done
  ld+=" -extldflags '-static -lm -ldl -lz -lpthread'"
  mkdir -p "$dest"
  k3s_go_build "$dest/k3s.tmp" ./cmd/server "$ld"
  cp "$k3s_src/install.sh" "$dest/install.sh"
  mv "$dest/k3s.tmp" "$dest/k3s"
  echo "built   k3s $version in $((SECONDS - start))s ($(du -m "$dest/k3s" | cut -f1) MB)"
}

# build_k8s CMD: the bed's own control plane (kube-apiserver, kube-controller-manager,
# kube-scheduler), and kubectl when named, from the Kubernetes k3s embeds (k3s's go.mod replaces
# k8s.io/kubernetes with its fork), in k3s's module: the packages k3s's build compiled are reused,
# and only the commands' own are compiled and linked (a cold build of the three took 458 s from
# upstream's module).
build_k8s() {
  local cmd=$1
  local dest="$cache/$cmd-v$K8S_VERSION/$cmd"
  if [ -x "$dest" ]; then
    echo "cached  $cmd v$K8S_VERSION"
    return
  fi
  echo "build   $cmd v$K8S_VERSION (Kubernetes in k3s-io/k3s@$K3S_MODULE_VERSION) ..."
  local start=$SECONDS minor=${K8S_VERSION#*.}
  k3s_source
  local ld="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $p.gitVersion=v$K8S_VERSION -X $p.gitMajor=${K8S_VERSION%%.*} -X $p.gitMinor=${minor%%.*} -X $p.gitTreeState=clean"
  done
  mkdir -p "$(dirname "$dest")"
  local pkg="k8s.io/kubernetes/cmd/$cmd"
  if [ "$cmd" = kube-apiserver ]; then
    # The fork's own main panics ("close of closed channel"): its NewAPIServerCommand sets up the
    # signal handler itself (k3s embeds it so, pkg/executor/embed), and cmd/kube-apiserver's main
    # sets one up first. This main leaves it to NewAPIServerCommand; the stop channel it takes is
    # unused (Run stops on the command's context).
    pkg=./testbed/kube-apiserver
    mkdir -p "$k3s_src/$pkg"
    cat >"$k3s_src/$pkg/main.go" <<'GO'
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand(nil)))
}
GO
  fi
  k3s_go_build "$dest.tmp" "$pkg" "$ld"
  mv "$dest.tmp" "$dest"
  echo "built   $cmd v$K8S_VERSION in $((SECONDS - start))s ($(du -m "$dest" | cut -f1) MB)"
}

if sel k3s; then
  build_k3s "$K3S_VERSION"
  build_k3s "$K3S_UPGRADE_VERSION"
fi
for cmd in kube-apiserver kube-controller-manager kube-scheduler; do
  sel "$cmd" && build_k8s "$cmd"
done
named kubectl && build_k8s kubectl
rm -rf "$k3s_src"
echo "test bed binaries are in $cache"
