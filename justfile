# gitops.k3s_flux recipes: `just --list --list-submodules` shows them all.
#   just ans k8s [ansible-playbook args]   bare hosts -> k3s -> Flux
#   just fx check|get|failing|sources|reconcile [name]|logs
# Install just with `npm install -g rust-just` (or your package manager).

mod ans
mod fx

[doc('List the recipes')]
default:
    @just --list --list-submodules
