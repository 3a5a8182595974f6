# shellcheck shell=bash
# Source this file to point kubectl and test code at the local e2e cluster:
#   source e2e/env.sh
# Exports KUBECONFIG and puts the kubectl matching the apiserver first on PATH.
# The cluster itself is started by `make cluster-up` (e2e/cluster-up.sh).
# shellcheck source=e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export KUBECONFIG=$E2E_KUBECONFIG
case ":$PATH:" in
*":$E2E_BIN:"*) ;;
*) export PATH=$E2E_BIN:$PATH ;;
esac
