/* kube: configuration in client-go order, kubeconfig fields and errors,
 * backoff, token bucket, watch framing. (Requests, retries and watches
 * against the test API server are in tests/k8s/client.sh.) */
#include "t.h"

#include "../../core/kube.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static void put(const char *name, const char *text)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	if (!f || fputs(text, f) < 0)
		exit(2);
	fclose(f);
}

/* base64 of "CA-PEM\n", "CERT\n", "KEY\n" */
#define CA64 "Q0EtUEVNCg=="
#define CERT64 "Q0VSVAo="
#define KEY64 "S0VZCg=="

static const char kc_inline[] =
	"apiVersion: v1\n"
	"kind: Config\n"
	"clusters:\n"
	"- cluster:\n"
	"    certificate-authority-data: " CA64 "\n"
	"    server: https://127.0.0.1:6443\n"
	"  name: kind-kind\n"
	"- cluster:\n"
	"    server: https://[::1]:8443\n"
	"    certificate-authority: ca.crt\n"
	"    tls-server-name: kubernetes.default.svc\n"
	"  name: v6\n"
	"contexts:\n"
	"- context:\n"
	"    cluster: kind-kind\n"
	"    user: kind-kind\n"
	"  name: kind-kind\n"
	"- context: {cluster: v6, user: filer, namespace: edge}\n"
	"  name: files\n"
	"current-context: kind-kind\n"
	"preferences: {}\n"
	"users:\n"
	"- name: kind-kind\n"
	"  user:\n"
	"    client-certificate-data: " CERT64 "\n"
	"    client-key-data: " KEY64 "\n"
	"- name: filer\n"
	"  user:\n"
	"    tokenFile: tok\n";

struct kc_case {
	const char *name, *text;
	int rc;
	const char *want; /* substring of the error (what + detail) */
};

static const struct kc_case bad[] = {
	{ "malformed YAML names line and column", "clusters:\n\t- x\n", -FB_EINVAL, "line 2 column 1" },
	{ "no current-context", "clusters: []\n", -FB_EINVAL, "current-context is not set" },
	{ "unknown context", "current-context: x\ncontexts: []\n", -FB_EINVAL, "names no entry of contexts" },
	{ "unknown cluster", "current-context: a\ncontexts:\n- name: a\n  context: {cluster: c, user: u}\n",
	  -FB_EINVAL, "names cluster \"c\"" },
	{ "exec plugin refused, naming the field and its place",
	  "current-context: a\ncontexts:\n- name: a\n  context: {cluster: c, user: u}\n"
	  "clusters:\n- name: c\n  cluster: {server: \"https://h:1\", insecure-skip-tls-verify: true}\n"
	  "users:\n- name: u\n  user:\n    exec:\n      command: aws\n",
	  -FB_EINVAL, "line 11 column 5: users[0].user.exec: exec credential plugins are not supported" },
	{ "auth-provider refused",
	  "current-context: a\ncontexts:\n- name: a\n  context: {cluster: c, user: u}\n"
	  "clusters:\n- name: c\n  cluster: {server: \"https://h:1\", insecure-skip-tls-verify: true}\n"
	  "users:\n- name: u\n  user: {auth-provider: {name: gcp}}\n",
	  -FB_EINVAL, "users[0].user.auth-provider" },
	{ "server without scheme", "current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\n"
	  "clusters:\n- name: c\n  cluster: {server: \"h:1\", insecure-skip-tls-verify: true}\n",
	  -FB_EINVAL, "must start with https://" },
	{ "bad port", "current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\n"
	  "clusters:\n- name: c\n  cluster: {server: \"https://h:99999\", insecure-skip-tls-verify: true}\n",
	  -FB_EINVAL, "bad port" },
	{ "bad base64", "current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\n"
	  "clusters:\n- name: c\n  cluster: {server: \"https://h:1\", certificate-authority-data: \"!!!\"}\n",
	  -FB_EINVAL, "certificate-authority-data: not valid base64" },
	{ "missing CA file names it", "current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\n"
	  "clusters:\n- name: c\n  cluster: {server: \"https://h:1\", certificate-authority: nope.crt}\n",
	  -FB_EINVAL, "nope.crt (cluster.certificate-authority)" },
	{ "no CA and not insecure", "current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\n"
	  "clusters:\n- name: c\n  cluster: {server: \"https://h:1\"}\n",
	  -FB_EINVAL, "no certificate-authority" },
	{ "certificate without key", "current-context: a\ncontexts:\n- name: a\n  context: {cluster: c, user: u}\n"
	  "clusters:\n- name: c\n  cluster: {server: \"https://h:1\", insecure-skip-tls-verify: true}\n"
	  "users:\n- name: u\n  user: {client-certificate-data: " CERT64 "}\n",
	  -FB_EINVAL, "without a key" },
};

static int fr_count;
static char fr_types[256];

static int on_ev(void *ctx, const char *type, struct json *obj)
{
	(void)ctx;
	(void)obj;
	fr_count++;
	strncat(fr_types, type, sizeof(fr_types) - strlen(fr_types) - 2);
	strcat(fr_types, ",");
	return 0;
}


/* metav1.LabelSelector -> labelSelector query value (restrictions.nodeFeatureNamespaceSelector) */
static const struct {
	const char *name, *json;
	int rc;
	const char *want; /* the value, or a piece of the error */
} sels[] = {
	{ "selector: null selects everything", "null", 0, "" },
	{ "selector: {} selects everything", "{}", 0, "" },
	{ "selector: matchLabels", "{\"matchLabels\":{\"a.io/b\":\"x\",\"c\":\"\"}}", 0, "a.io%2Fb%3Dx%2Cc%3D" },
	{ "selector: every operator, names ignoring case",
	  "{\"MatchExpressions\":[{\"key\":\"k\",\"operator\":\"In\",\"values\":[\"a\",\"b\"]},"
	  "{\"Key\":\"k2\",\"operator\":\"NotIn\",\"values\":[\"c\"]},{\"key\":\"e\",\"operator\":\"Exists\"},"
	  "{\"key\":\"d\",\"operator\":\"DoesNotExist\",\"values\":[]}]}", 0,
	  "k%20in%20%28a%2Cb%29%2Ck2%20notin%20%28c%29%2Ce%2C%21d" },
	{ "selector: matchLabels and matchExpressions together",
	  "{\"matchLabels\":{\"a\":\"1\"},\"matchExpressions\":[{\"key\":\"b\",\"operator\":\"Exists\"}]}", 0,
	  "a%3D1%2Cb" },
	{ "selector: unknown member", "{\"matchFields\":{}}", -FB_EINVAL, "unknown member matchFields" },
	{ "selector: unknown operator", "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Gt\",\"values\":[\"1\"]}]}",
	  -FB_EINVAL, "operator Gt" },
	{ "selector: operators are case-sensitive", "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"in\",\"values\":[\"1\"]}]}",
	  -FB_EINVAL, "operator in" },
	{ "selector: In without values", "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\"}]}", -FB_EINVAL,
	  "In needs values" },
	{ "selector: Exists with values", "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Exists\",\"values\":[\"x\"]}]}",
	  -FB_EINVAL, "Exists takes no values" },
	{ "selector: a value that would change the selector", "{\"matchLabels\":{\"a\":\"x,b!=c\"}}", -FB_EINVAL,
	  "no label value" },
	{ "selector: a key that is no label key", "{\"matchExpressions\":[{\"key\":\"a b\",\"operator\":\"Exists\"}]}",
	  -FB_EINVAL, "not a label key" },
	{ "selector: a non-string value", "{\"matchLabels\":{\"a\":1}}", -FB_EINVAL, "quote it" },
	{ "selector: not a mapping", "[]", -FB_EINVAL, "not a mapping" },
	{ "selector: member unknown in an expression", "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Exists\",\"op\":1}]}",
	  -FB_EINVAL, "matchExpressions[0]" },
};

static void test_selectors(void)
{
	char out[128], msg[400];
	struct fb_errinfo ei;

	for (size_t i = 0; i < sizeof(sels) / sizeof(sels[0]); i++) {
		struct json *j = json_parse(sels[i].json, strlen(sels[i].json), "sel", &ei);
		int rc;

		fb_errinfo_init(&ei);
		rc = kube_label_selector(j, out, sizeof(out), &ei);
		if (sels[i].rc >= 0) {
			T_OK(sels[i].name, rc == (int)strlen(sels[i].want) && !strcmp(out, sels[i].want), "rc=%d out=%s", rc, out);
		} else {
			fb_errinfo_str(&ei, msg, sizeof(msg));
			T_OK(sels[i].name, rc == sels[i].rc && strstr(msg, sels[i].want), "rc=%d msg=%s", rc, msg);
		}
		json_free(j);
	}
	{
		const char *big = "{\"matchLabels\":{\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\":"
				  "\"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\","
				  "\"c\":\"d\"}}";
		struct json *j = json_parse(big, strlen(big), "sel", &ei);

		T_INT("selector: longer than the buffer -> E2BIG", kube_label_selector(j, out, 100, &ei), -FB_E2BIG);
		json_free(j);
	}
}

int main(void)
{
	struct kube_opts o;
	struct kube_config cfg;
	struct fb_errinfo ei;
	char p[256], msg[2048];
	int rc;

	t_suite = "kube";
	strcpy(dir, "/tmp/fb-kube-XXXXXX");
	if (!mkdtemp(dir))
		return 2;
	put("config", kc_inline);
	put("ca.crt", "CA FILE\n");
	put("tok", "  file-token-1  \n");
	snprintf(p, sizeof(p), "%s/config", dir);

	kube_opts_init(&o);
	o.kubeconfig = p;
	o.env_kubeconfig = NULL;
	rc = kube_config_load(&cfg, &o, &ei);
	T_INT("inline kubeconfig loads", rc, 0);
	if (rc == 0) {
		T_STR("host", cfg.host, "127.0.0.1");
		T_INT("port", cfg.port, 6443);
		T_STR("server name defaults to the host (IP SAN)", cfg.server_name, "127.0.0.1");
		T_OK("CA from -data", cfg.ca_len == 7 && !memcmp(cfg.ca_pem, "CA-PEM\n", 7), "len %zu", cfg.ca_len);
		T_OK("client cert and key from -data", cfg.cert_len == 5 && cfg.key_len == 4 &&
			 !memcmp(cfg.key_pem, "KEY\n", 4), "%zu %zu", cfg.cert_len, cfg.key_len);
		T_OK("source names file and context", strstr(cfg.source, "(context kind-kind)") != NULL, "%s", cfg.source);
		T_STR("namespace default", cfg.namespace_, "default");
		kube_config_free(&cfg);
	}
	/* the other context: files relative to the kubeconfig, IPv6, tls-server-name, tokenFile */
	put("config2", "current-context: files\n");
	{
		char *t = NULL;

		snprintf(msg, sizeof(msg), "%scurrent-context: files\n", kc_inline);
		/* replace the first current-context line */
		t = strstr(msg, "current-context: kind-kind\n");
		memmove(t, t + strlen("current-context: kind-kind\n"), strlen(t + strlen("current-context: kind-kind\n")) + 1);
		put("config2", msg);
	}
	snprintf(p, sizeof(p), "%s/config2", dir);
	o.kubeconfig = p;
	rc = kube_config_load(&cfg, &o, &ei);
	T_INT("second context loads", rc, 0);
	if (rc == 0) {
		T_STR("IPv6 literal host", cfg.host, "::1");
		T_INT("IPv6 port", cfg.port, 8443);
		T_STR("tls-server-name", cfg.server_name, "kubernetes.default.svc");
		T_OK("CA file relative to the kubeconfig", cfg.ca_len == 8 && !memcmp(cfg.ca_pem, "CA FILE\n", 8), "len %zu", cfg.ca_len);
		snprintf(msg, sizeof(msg), "%s/tok", dir);
		T_STR("tokenFile relative to the kubeconfig", cfg.token_file, msg);
		T_STR("context namespace", cfg.namespace_, "edge");
		kube_config_free(&cfg);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		put("bad", bad[i].text);
		snprintf(p, sizeof(p), "%s/bad", dir);
		o.kubeconfig = p;
		fb_errinfo_init(&ei);
		rc = kube_config_load(&cfg, &o, &ei);
		fb_errinfo_str(&ei, msg, sizeof(msg));
		T_OK(bad[i].name, rc == bad[i].rc && strstr(msg, bad[i].want), "rc=%d msg=%s", rc, msg);
	}
	/* order: flag, then KUBECONFIG (first of a list), then in-cluster, then ~/.kube/config */
	kube_opts_init(&o);
	snprintf(p, sizeof(p), "%s/config:%s/other", dir, dir);
	o.kubeconfig = NULL;
	o.env_kubeconfig = p;
	o.env_host = "10.96.0.1";
	o.env_port = "443";
	rc = kube_config_load(&cfg, &o, &ei);
	T_OK("KUBECONFIG beats in-cluster, first of the list", rc == 0 && !strcmp(cfg.host, "127.0.0.1"), "rc=%d", rc);
	if (rc == 0)
		kube_config_free(&cfg);
	o.env_kubeconfig = NULL;
	snprintf(msg, sizeof(msg), "%s/sa", dir);
	mkdir(msg, 0755);
	put("sa/ca.crt", "SA CA\n");
	put("sa/token", "sa-token\n");
	put("sa/namespace", "kube-system");
	o.sa_dir = msg;
	rc = kube_config_load(&cfg, &o, &ei);
	T_INT("in-cluster loads", rc, 0);
	if (rc == 0) {
		T_STR("in-cluster host is the service IP", cfg.host, "10.96.0.1");
		T_STR("in-cluster verifies the IP", cfg.server_name, "10.96.0.1");
		T_OK("in-cluster token file", strstr(cfg.token_file, "/sa/token") != NULL, "%s", cfg.token_file);
		T_STR("in-cluster namespace", cfg.namespace_, "kube-system");
		kube_config_free(&cfg);
	}
	o.env_port = "http";
	T_INT("bad KUBERNETES_SERVICE_PORT", kube_config_load(&cfg, &o, &ei), -FB_EINVAL);
	o.env_host = NULL;
	o.home = dir; /* no .kube/config there */
	T_INT("nothing anywhere", kube_config_load(&cfg, &o, &ei), -FB_ENOENT);
	fb_errinfo_str(&ei, msg, sizeof(msg));
	T_OK("and the message says what to do", strstr(msg, "--kubeconfig") != NULL, "%s", msg);

	/* backoff: doubles from 800 ms to a 30 s cap, jitter within +25% */
	{
		struct kube_backoff b;
		long long d, base = 800;
		int ok = 1;

		kube_backoff_init(&b, 800, 30000, 42);
		for (int i = 0; i < 10; i++, base = base * 2 > 30000 ? 30000 : base * 2) {
			d = kube_backoff_next(&b);
			ok &= d >= base && d <= base + base / 4;
		}
		T_OK("backoff doubles to the cap with bounded jitter", ok, "d=%lld", d);
		kube_backoff_reset(&b);
		d = kube_backoff_next(&b);
		T_OK("reset starts over", d >= 800 && d <= 1000, "d=%lld", d);
	}
	/* token bucket: burst, then qps */
	{
		struct kube_bucket t;
		int got = 0;

		kube_bucket_init(&t, 5, 10, 1000);
		while (kube_bucket_take(&t, 1000) == 0)
			got++;
		T_INT("burst of 10", got, 10);
		T_OK("then one token per 200 ms", kube_bucket_take(&t, 1000) > 150 && kube_bucket_take(&t, 1200) == 0, "no");
	}
	/* watch framing */
	{
		static const char stream[] =
			"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n"
			"{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"9\"}}}\n\n"
			"{\"type\":\"MODIFIED\",\"object\":{}}\r\n";
		struct kube_framer f;

		kube_framer_init(&f, 1 << 20);
		fr_count = 0;
		fr_types[0] = '\0';
		rc = 0;
		for (size_t i = 0; i < sizeof(stream) - 1 && rc == 0; i++) /* one byte at a time */
			rc = kube_framer_feed(&f, stream + i, 1, on_ev, NULL, &ei);
		T_OK("events split across every byte", rc == 0 && fr_count == 3 &&
			 !strcmp(fr_types, "ADDED,BOOKMARK,MODIFIED,"), "rc=%d n=%d %s", rc, fr_count, fr_types);
		fr_count = 0;
		fr_types[0] = '\0';
		rc = kube_framer_feed(&f, stream, sizeof(stream) - 1, on_ev, NULL, &ei);
		T_OK("many events in one chunk", rc == 0 && fr_count == 3, "rc=%d n=%d", rc, fr_count);
		T_INT("not JSON", kube_framer_feed(&f, "nope\n", 5, on_ev, NULL, &ei), -FB_EPROTO);
		T_INT("no object", kube_framer_feed(&f, "{\"type\":\"ADDED\"}\n", 17, on_ev, NULL, &ei), -FB_EPROTO);
		kube_framer_free(&f);
		kube_framer_init(&f, 64);
		T_INT("event over the cap", kube_framer_feed(&f, stream, sizeof(stream) - 1, on_ev, NULL, &ei), -FB_E2BIG);
		kube_framer_free(&f);
	}
	{
		char e[64];

		kube_json_pointer_escape("beta.devicetree.org/a~b", e, sizeof(e));
		T_STR("JSON pointer escape", e, "beta.devicetree.org~1a~0b");
	}
	snprintf(msg, sizeof(msg), "rm -rf '%s'", dir);
	if (system(msg) != 0)
		return 2;
	test_selectors();
	return t_done();
}
