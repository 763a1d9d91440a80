# Upstream's command lines, as shipped (issue 18): the argv of every
# container upstream node-feature-discovery's kustomize overlays and Helm
# chart (rendered with the chart's default values) run, v0.16.0 to v0.19.0.
# Each goes through the binary as it is; what the test adds comes after it,
# to make a run end: the worker gets a fixture host and -oneshot -no-publish
# (exit 0), the master and nfd-gc a kubeconfig that is not there (exit 1,
# past their flags: a usage error would be 2). Facts from upstream's manifests, in our
# own table: COMPONENT|SOURCE|ARGS.
. "$(dirname "$0")/../lib/testing.sh"
F=$FB_TOP/tests/fixtures

mkdir -p "$W/pi" "$W/fd"
cp -r "$F/nfd/rpi4/." "$W/pi/" && cp -r "$F/sysfs/rpi4/." "$W/pi/"

while IFS='|' read -r comp src args; do
	case $comp in '' | '#'*) continue ;; esac
	case $comp in
	nfd-worker)
		more="-oneshot -no-publish -config $W/none.conf -host-prefix $W/pi/ -features-dir $W/fd"
		want=0 ;;
	nfd-master)
		more="-config $W/none.conf -kubeconfig $W/no-such-kubeconfig"
		want=1 ;;
	nfd-gc)
		more="-kubeconfig $W/no-such-kubeconfig"
		want=1 ;;
	esac
	# shellcheck disable=SC2086
	testing "$src: $comp $args" \
		"NODE_NAME=node1 $FB $comp $args $more >/dev/null 2>$W/err; echo \$?; grep -c -E 'unknown option|invalid value|unexpected argument' $W/err" \
		"$want\n0\n"
done <<'EOF'
# kustomize: deployment/overlays/{default,default-job,prune,...}
nfd-worker|kustomize v0.16 DaemonSet|-server=nfd-master:8080
nfd-worker|kustomize v0.16 Job|-oneshot -server=nfd-master:8080
nfd-worker|kustomize v0.17-v0.19 DaemonSet|
nfd-worker|kustomize v0.17-v0.18 Job|-oneshot
nfd-worker|kustomize v0.19 Job|-oneshot -owner-refs=node
nfd-master|kustomize Deployment (every version)|
nfd-master|kustomize prune Job (every version)|-prune
nfd-gc|kustomize Deployment (every version)|
# Helm: deployment/helm/node-feature-discovery, default values
nfd-worker|helm v0.16.0-v0.16.4|-feature-gates=NodeFeatureAPI=true -feature-gates=NodeFeatureGroupAPI=false -metrics=8081
nfd-worker|helm v0.16.5-v0.16.9|-feature-gates=NodeFeatureAPI=true -feature-gates=NodeFeatureGroupAPI=false -metrics=8081 -grpc-health=8082
nfd-worker|helm v0.17|-feature-gates=NodeFeatureGroupAPI=false -metrics=8081 -grpc-health=8082
nfd-worker|helm v0.18|-feature-gates=NodeFeatureGroupAPI=false -port=8080
nfd-worker|helm v0.19|-owner-refs=pod,ds -port=8080
nfd-master|helm v0.16.0-v0.16.4|-crd-controller=true -feature-gates=NodeFeatureAPI=true -feature-gates=NodeFeatureGroupAPI=false -metrics=8081
nfd-master|helm v0.16.5-v0.16.9|-crd-controller=true -feature-gates=NodeFeatureAPI=true -feature-gates=NodeFeatureGroupAPI=false -metrics=8081 -grpc-health=8082
nfd-master|helm v0.17|-enable-leader-election -feature-gates=NodeFeatureGroupAPI=false -metrics=8081 -grpc-health=8082
nfd-master|helm v0.18|-enable-leader-election -feature-gates=NodeFeatureGroupAPI=false -port=8080
nfd-master|helm v0.19|-port=8080
nfd-master|helm post-delete Job (every version)|-prune
nfd-gc|helm (every version)|-gc-interval=1h
# Helm with values a user sets (the templates' other branches)
nfd-worker|helm v0.16 tls.enable|-ca-file=/etc/kubernetes/node-feature-discovery/certs/ca.crt -key-file=/etc/kubernetes/node-feature-discovery/certs/tls.key -cert-file=/etc/kubernetes/node-feature-discovery/certs/tls.crt -metrics=8081
nfd-master|helm v0.16 instance and lists|-instance=blue -extra-label-ns=vendor.example.com -deny-label-ns=*.denied.example.com -resource-labels=vendor.example.com/cards -enable-taints -crd-controller=false -featurerules-controller=true -resync-period=30m -nfd-api-parallelism=5
nfd-master|helm v0.16 tls.enable|-ca-file=/etc/kubernetes/node-feature-discovery/certs/ca.crt -key-file=/etc/kubernetes/node-feature-discovery/certs/tls.key -cert-file=/etc/kubernetes/node-feature-discovery/certs/tls.crt -verify-node-name -enable-nodefeature-api=true
EOF

# what the ignored ones say, once each
NODE_NAME=node1 $FB nfd-worker -server=nfd-master:8080 -metrics=8081 -oneshot -no-publish -config "$W/none.conf" \
	-host-prefix "$W/pi/" -features-dir "$W/fd" >/dev/null 2>"$W/ign.err"
testing "an ignored upstream flag is named once, with why" \
	"grep -c -- '-server is accepted and ignored: v0.16.s gRPC master address' $W/ign.err; grep -c -- '-metrics is accepted and ignored' $W/ign.err" "1\n1\n"
testing "-no-owner-refs: deprecated, said so" \
	"NODE_NAME=node1 $FB nfd-worker -no-owner-refs -oneshot -no-publish -config $W/none.conf -host-prefix $W/pi/ -features-dir $W/fd 2>&1 >/dev/null | grep -c -- '-no-owner-refs is deprecated, use -owner-refs='" "1\n"

# -feature-gates as upstream checks it: exit 2, Go's words
for c in nfd-worker nfd-master; do
	testing "$c -feature-gates: an unknown gate" \
		"$FB $c -feature-gates=NoSuchGate=true 2>&1 >/dev/null | grep -c 'invalid value \"NoSuchGate=true\" for flag -feature-gates: unrecognized feature gate: NoSuchGate'; $FB $c -feature-gates=NoSuchGate=true >/dev/null 2>&1; echo \$?" "1\n2\n"
	testing "$c -feature-gates: NodeFeatureAPI is locked to true" \
		"$FB $c -feature-gates=NodeFeatureAPI=false 2>&1 >/dev/null | grep -c 'cannot set feature gate NodeFeatureAPI to false, feature is locked to true'; $FB $c -feature-gates=NodeFeatureAPI=false >/dev/null 2>&1; echo \$?" "1\n2\n"
	testing "$c -feature-gates: a value that is not a bool" \
		"$FB $c -feature-gates=DisableAutoPrefix=maybe 2>&1 >/dev/null | grep -c 'invalid value of DisableAutoPrefix=maybe'; $FB $c -feature-gates=NodeFeatureGroupAPI >/dev/null 2>&1; echo \$?" "1\n2\n"
done
done_testing
