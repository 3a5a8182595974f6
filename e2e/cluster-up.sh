#!/usr/bin/env bash
# Starts the local control plane for e2e tests: etcd (tmpfs), kube-apiserver
# (RBAC, token auth) and kwok, all on 127.0.0.1, then installs the Volcano
# PodGroup, Queue, HyperNode and Numatopology CRDs (deploy/crds). Builds the binaries first
# if needed. Idempotent: a healthy running cluster is left as it is; a partial
# one is torn down and started afresh. On any failure everything it started is
# stopped again.
#
# Usage: e2e/cluster-up.sh        (see e2e/README.md for the knobs)
set -euo pipefail
# shellcheck source=e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

"$E2E_DIR/build-tools.sh"

for tool in curl openssl ss flock setsid base64; do
	command -v "$tool" >/dev/null || e2e_die "'$tool' is needed (Debian: curl, openssl, iproute2, util-linux, coreutils)"
done

mkdir -p "$E2E_RUN"
# One cluster-up/cluster-down at a time per run directory. The daemons must not
# inherit this descriptor, or they would hold the lock for their whole life.
exec 8>"$E2E_RUN/.lock"
flock 8

PKI=$E2E_RUN/pki
LOGS=$E2E_RUN/logs
TOKEN_FILE=$E2E_RUN/admin.token

# The admin token, read from the file cluster-up wrote (empty if none yet).
admin_token() { [[ -r $TOKEN_FILE ]] && cat "$TOKEN_FILE"; }

apiserver_ready() {
	local token
	token=$(admin_token) || return 1
	[[ $(curl -fsS --max-time 2 --cacert "$PKI/ca.crt" -H "Authorization: Bearer $token" \
		"$E2E_SERVER/readyz" 2>/dev/null) == ok ]]
}
etcd_healthy() {
	curl -fsS --max-time 2 "http://127.0.0.1:$E2E_ETCD_CLIENT_PORT/health" 2>/dev/null |
		grep -q '"health":"true"'
}
kwok_healthy() {
	[[ $(curl -fsS --max-time 2 "http://127.0.0.1:$E2E_KWOK_PORT/healthz" 2>/dev/null) == ok ]]
}

install_crds() {
	e2e_kubectl apply --server-side --force-conflicts --field-manager=volcano-rs-e2e \
		-f "$E2E_REPO/deploy/crds/" >/dev/null
	e2e_kubectl wait --for condition=Established --timeout=60s \
		crd/podgroups.scheduling.volcano.sh crd/queues.scheduling.volcano.sh >/dev/null
	# Volcano's Job and Command CRDs, for the test that runs Volcano's own job controller
	# (VOLCANO_E2E_VOLCANO_DIR: what e2e/build-volcano.sh prints).
	if [[ -n ${VOLCANO_E2E_VOLCANO_DIR-} ]]; then
		e2e_kubectl apply --server-side --force-conflicts --field-manager=volcano-rs-e2e \
			-f "$VOLCANO_E2E_VOLCANO_DIR/crds/" >/dev/null
		# A CRD that was just created may have no conditions yet, which `kubectl wait`
		# reports as an error rather than waiting for.
		local tries=0
		until e2e_kubectl wait --for condition=Established --timeout=60s \
			crd/jobs.batch.volcano.sh crd/commands.bus.volcano.sh >/dev/null 2>&1; do
			((++tries < 60)) || e2e_die "Volcano's CRDs did not become Established"
			sleep 0.5
		done
	fi
}

# kwok's upstream stages, with the pod-complete stage (a Running pod owned by a Job
# finishes at once) narrowed to batch/v1 Jobs: a Volcano Job's pods are owned by a
# batch.volcano.sh Job and must stay Running like any long-running worker.
kwok_stages() {
	awk '
		/- key: .\.metadata\.ownerReferences\.\[\]\.kind./ {
			indent = substr($0, 1, index($0, "-") - 1)
			print indent "- key: '"'"'.metadata.ownerReferences.[].apiVersion'"'"'"
			print indent "  operator: '"'"'In'"'"'"
			print indent "  values:"
			print indent "  - '"'"'batch/v1'"'"'"
		}
		{ print }
	' "$E2E_BIN/kwok-stages.yaml"
}

report() {
	e2e_log "cluster ready: $E2E_SERVER"
	e2e_log "  kubeconfig: $E2E_KUBECONFIG   (or: source e2e/env.sh)"
	e2e_log "  logs:       $LOGS/"
	e2e_log "  fake nodes: e2e/nodes.sh COUNT CPU MEMORY [PODS]"
	printf '%s\n' "$E2E_KUBECONFIG"
}

running=$(e2e_pids)
if [[ -n $running ]]; then
	if [[ $(e2e_pids etcd) && $(e2e_pids kube-apiserver) && $(e2e_pids kwok) &&
		$(e2e_pids kube-controller-manager) ]] &&
		apiserver_ready && kwok_healthy; then
		e2e_log "already running"
		install_crds
		report
		exit 0
	fi
	e2e_log "found a partial cluster; restarting it"
	flock -u 8
	"$E2E_DIR/cluster-down.sh"
	flock 8
fi

for port in "$E2E_ETCD_CLIENT_PORT" "$E2E_ETCD_PEER_PORT" "$E2E_APISERVER_PORT" "$E2E_KWOK_PORT"; do
	if e2e_port_in_use "$port"; then
		e2e_die "port $port is already in use; choose other ports with VOLCANO_E2E_{ETCD,ETCD_PEER,APISERVER,KWOK}_PORT"
	fi
done

# From here on, whatever goes wrong leaves nothing running.
started=false
on_exit() {
	local rc=$?
	if ! $started; then
		e2e_log "cluster-up failed; logs are in $LOGS/"
		flock -u 8
		"$E2E_DIR/cluster-down.sh" || true
	fi
	exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

rm -rf "$PKI" "$LOGS" "$E2E_ETCD_DATA"
mkdir -p "$PKI" "$LOGS"
mkdir -m 700 "$E2E_ETCD_DATA"

# --- PKI: a CA, a serving certificate for 127.0.0.1, a service-account key ---
# Our own CA (rather than the apiserver's --cert-dir self-signed pair) so that
# the kubeconfig can verify the server: some clients (rustls) refuse
# insecure-skip-tls-verify setups or self-signed leaf certificates.
(
	umask 077
	cd "$PKI"
	openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -sha256 \
		-keyout ca.key -out ca.crt -subj /CN=volcano-rs-e2e-ca \
		-addext basicConstraints=critical,CA:TRUE \
		-addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
	openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr \
		-subj /CN=kube-apiserver 2>/dev/null
	cat >apiserver.ext <<-EOF
		basicConstraints=critical,CA:FALSE
		keyUsage=critical,digitalSignature,keyEncipherment
		extendedKeyUsage=serverAuth
		subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
	EOF
	openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
		-days 3650 -sha256 -extfile apiserver.ext -out apiserver.crt 2>/dev/null
	openssl genrsa -out sa.key 2048 2>/dev/null
	# A static token whose user is in system:masters: full admin under RBAC.
	token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
	printf '%s\n' "$token" >"$TOKEN_FILE"
	printf '%s,volcano-rs-e2e-admin,volcano-rs-e2e-admin,"system:masters"\n' "$token" >tokens.csv
)

token=$(admin_token)
ca_data=$(base64 -w0 <"$PKI/ca.crt")
(
	umask 077
	cat >"$E2E_KUBECONFIG.tmp" <<-EOF
		apiVersion: v1
		kind: Config
		clusters:
		- name: volcano-rs-e2e
		  cluster:
		    server: $E2E_SERVER
		    certificate-authority-data: $ca_data
		users:
		- name: admin
		  user:
		    token: $token
		contexts:
		- name: volcano-rs-e2e
		  context:
		    cluster: volcano-rs-e2e
		    user: admin
		    namespace: default
		current-context: volcano-rs-e2e
	EOF
	mv "$E2E_KUBECONFIG.tmp" "$E2E_KUBECONFIG"
)

# start NAME ARGS...: runs $E2E_BIN/NAME as the leader of a new session and
# process group, detached from our stdio, marked for e2e_pids.
start() {
	local name=$1
	shift
	env "$E2E_MARKER" setsid "$E2E_BIN/$name" "$@" \
		</dev/null >"$LOGS/$name.log" 2>&1 8>&- 9>&- &
}

# wait_ready NAME SECONDS CHECK...: waits for CHECK, failing early (with the end
# of the log) if the process exits. Right after `start` the process may still be
# `env` or `setsid` on its way to exec'ing NAME, so it counts as gone only once it
# was seen running, or when it has not shown up within 5 s.
wait_ready() {
	local name=$1 timeout=$2 deadline seen=false grace
	shift 2
	deadline=$((SECONDS + timeout))
	grace=$((SECONDS + 5))
	until "$@"; do
		if [[ -n $(e2e_pids "$name") ]]; then
			seen=true
		elif $seen || ((SECONDS >= grace)); then
			tail -n 30 "$LOGS/$name.log" >&2 || true
			e2e_die "$name exited during start-up (log: $LOGS/$name.log)"
		fi
		if ((SECONDS >= deadline)); then
			tail -n 30 "$LOGS/$name.log" >&2 || true
			e2e_die "$name not ready after ${timeout}s (log: $LOGS/$name.log)"
		fi
		sleep 0.2
	done
}

t0=$SECONDS
e2e_log "starting etcd on 127.0.0.1:$E2E_ETCD_CLIENT_PORT (data: $E2E_ETCD_DATA)"
etcd_peer=http://127.0.0.1:$E2E_ETCD_PEER_PORT
etcd_client=http://127.0.0.1:$E2E_ETCD_CLIENT_PORT
# Throw-away data on tmpfs: fsync buys nothing, and skipping it keeps the
# apiserver's write path fast on 2 cores.
start etcd --name=volcano-rs-e2e --data-dir="$E2E_ETCD_DATA" \
	--listen-client-urls="$etcd_client" --advertise-client-urls="$etcd_client" \
	--listen-peer-urls="$etcd_peer" --initial-advertise-peer-urls="$etcd_peer" \
	--initial-cluster="volcano-rs-e2e=$etcd_peer" --initial-cluster-state=new \
	--unsafe-no-fsync=true --quota-backend-bytes=4294967296 \
	--auto-compaction-mode=periodic --auto-compaction-retention=10m
wait_ready etcd 30 etcd_healthy

e2e_log "starting kube-apiserver on $E2E_SERVER"
# The serviceaccount controller of kube-controller-manager does not run, hence: ServiceAccount
# admission off (nobody creates the default ServiceAccounts) and
# TaintNodesByCondition off (nobody would lift the not-ready taint from new nodes). No kubernetes-Service
# endpoint reconciler: its only address would be loopback, which Endpoints
# validation rejects. Priority-and-fairness and in-flight limits off, as
# kwokctl does, so the scheduler under test is the only throttle.
start kube-apiserver \
	--etcd-servers="$etcd_client" \
	--bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$E2E_APISERVER_PORT" \
	--tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
	--token-auth-file="$PKI/tokens.csv" \
	--authorization-mode=RBAC \
	--service-account-issuer=https://kubernetes.default.svc.cluster.local \
	--service-account-key-file="$PKI/sa.key" \
	--service-account-signing-key-file="$PKI/sa.key" \
	--service-cluster-ip-range=10.0.0.0/24 \
	--endpoint-reconciler-type=none \
	--disable-admission-plugins=ServiceAccount,TaintNodesByCondition \
	--allow-privileged=true \
	--enable-priority-and-fairness=false --max-requests-inflight=0 --max-mutating-requests-inflight=0
wait_ready kube-apiserver 120 apiserver_ready

e2e_log "installing the PodGroup, Queue, HyperNode and Numatopology CRDs (and Volcano's Job CRDs when asked)"
install_crds

e2e_log "starting kwok (manages nodes labelled $E2E_KWOK_LABEL_KEY=$E2E_KWOK_LABEL_VALUE)"
# kwok refuses to start without Stage definitions: the upstream "fast" node
# and pod stages (node Ready at once; bound pod Running; batch/v1 Job pod
# Succeeded; deleted pod removed). No node leases (nothing reads them without a
# controller-manager, and they would cost writes); a /16 pod CIDR instead of
# the default /24 so that more than 254 pods get addresses. The debugging
# server (logs/exec) stays off; its listener serves /healthz on loopback only.
{
	cat <<-EOF
		apiVersion: config.kwok.x-k8s.io/v1alpha1
		kind: KwokConfiguration
		options:
		  manageAllNodes: false
		  manageNodesWithLabelSelector: $E2E_KWOK_LABEL_KEY=$E2E_KWOK_LABEL_VALUE
		  serverAddress: 127.0.0.1:$E2E_KWOK_PORT
		  enableDebuggingHandlers: false
		  nodeLeaseDurationSeconds: 0
		  cidr: 10.244.0.0/16
		  podPlayStageParallelism: 8
		  nodePlayStageParallelism: 4
	EOF
	kwok_stages
} >"$E2E_RUN/kwok.yaml"
start kwok --kubeconfig="$E2E_KUBECONFIG" --config="$E2E_RUN/kwok.yaml"
wait_ready kwok 60 kwok_healthy

e2e_log "starting kube-controller-manager (quota, volume binder, owners, namespaces, workloads, tokens)"
# The resourcequota plugin reads a ResourceQuota's status.hard/status.used, which only the
# quota controller writes; the volume binder completes the claim bindings volcano-rs starts
# (a static volume's claimRef) and binds pre-bound claims; the garbage collector and the
# namespace controller give objects real owners and namespaces a real deletion; the job,
# replicaset and deployment controllers create pods as on any cluster; the service-account
# token controller fills token Secrets. No leader election, no serving port; the
# ServiceAccount admission stays off, so pods need no ServiceAccount object.
start kube-controller-manager --kubeconfig="$E2E_KUBECONFIG" \
	--controllers=resourcequota,persistentvolume-binder,garbagecollector,namespace,job,replicaset,deployment,serviceaccount-token \
	--service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
	--leader-elect=false --secure-port=0 \
	--resource-quota-sync-period=10s --concurrent-resource-quota-syncs=2
kcm_running() { sleep 1; [[ -n $(e2e_pids kube-controller-manager) ]]; }
wait_ready kube-controller-manager 30 kcm_running

started=true
e2e_log "started in $((SECONDS - t0))s"
report
