/* yaml: real kubeconfigs and nfd configs, every accepted construct, type
 * resolution, every refused construct with its line and column, CRLF, BOM,
 * empty documents, the depth limit, yaml_locate. */
#include "t.h"

#include "../../core/err.h"
#include "../../core/json.h"
#include "../../core/yaml.h"

#include <stdlib.h>

/* as kind writes it (base64 shortened) */
static const char kind_kubeconfig[] =
	"apiVersion: v1\n"
	"clusters:\n"
	"- cluster:\n"
	"    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMvakNDQWVhZ0F3SUJBZ0lCQURBTkJna3Foa2lHOXcwQkFRc0ZBREFWTVJNd0VRWURWUVFERXdwcmRXSmwKY201bGRHVnpNQjRYRFRJek1ERXhOakUyTkRjME5Gb1hEVE16TURFeE16RTJORGMwTkZvd0ZURVRNQkVHQTFVRQo=\n"
	"    server: https://127.0.0.1:40147\n"
	"  name: kind-kind\n"
	"contexts:\n"
	"- context:\n"
	"    cluster: kind-kind\n"
	"    user: kind-kind\n"
	"  name: kind-kind\n"
	"current-context: kind-kind\n"
	"kind: Config\n"
	"preferences: {}\n"
	"users:\n"
	"- name: kind-kind\n"
	"  user:\n"
	"    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSURJVENDQWdtZ0F3SUJBZ0lJTjNxS0c=\n"
	"    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb3dJQkFBS0NBUUVBdFZ1=\n";

static const char kind_json[] =
	"{\"apiVersion\":\"v1\",\"clusters\":[{\"cluster\":{\"certificate-authority-data\":"
	"\"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMvakNDQWVhZ0F3SUJBZ0lCQURBTkJna3Foa2lHOXcwQkFRc0ZBREFWTVJNd0VRWURWUVFERXdwcmRXSmwKY201bGRHVnpNQjRYRFRJek1ERXhOakUyTkRjME5Gb1hEVE16TURFeE16RTJORGMwTkZvd0ZURVRNQkVHQTFVRQo=\","
	"\"server\":\"https://127.0.0.1:40147\"},\"name\":\"kind-kind\"}],"
	"\"contexts\":[{\"context\":{\"cluster\":\"kind-kind\",\"user\":\"kind-kind\"},\"name\":\"kind-kind\"}],"
	"\"current-context\":\"kind-kind\",\"kind\":\"Config\",\"preferences\":{},"
	"\"users\":[{\"name\":\"kind-kind\",\"user\":{\"client-certificate-data\":"
	"\"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSURJVENDQWdtZ0F3SUJBZ0lJTjNxS0c=\","
	"\"client-key-data\":\"LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb3dJQkFBS0NBUUVBdFZ1=\"}}]}";

/* as k3s writes /etc/rancher/k3s/k3s.yaml, plus a token user and the
 * quoting and comments a person editing it adds */
static const char k3s_kubeconfig[] =
	"# edited by hand\n"
	"apiVersion: v1\n"
	"clusters:\n"
	"  - cluster:\n"
	"      certificate-authority-data: LS0tLS1CRUdJTg==\n"
	"      server: \"https://10.0.0.5:6443\"\n"
	"      insecure-skip-tls-verify: false\n"
	"    name: default\n"
	"contexts:\n"
	"  - context:\n"
	"      cluster: default\n"
	"      namespace: kube-system   # where nfd runs\n"
	"      user: default\n"
	"    name: default\n"
	"current-context: default\n"
	"kind: Config\n"
	"preferences: {}\n"
	"users:\n"
	"  - name: default\n"
	"    user:\n"
	"      token: eyJhbGciOiJSUzI1NiIsImtpZCI6IkJ2dXQ0In0.eyJpc3MiOiJrdWJlcm5ldGVzIn0.c2lnbmF0dXJl\n"
	"  - name: 'admin'\n"
	"    user:\n"
	"      username: admin\n"
	"      password: \"p@ss: w0rd #1\"\n"
	"#  - name: old\n"
	"#    user: {}\n";

static const char k3s_json[] =
	"{\"apiVersion\":\"v1\",\"clusters\":[{\"cluster\":{\"certificate-authority-data\":\"LS0tLS1CRUdJTg==\","
	"\"server\":\"https://10.0.0.5:6443\",\"insecure-skip-tls-verify\":false},\"name\":\"default\"}],"
	"\"contexts\":[{\"context\":{\"cluster\":\"default\",\"namespace\":\"kube-system\",\"user\":\"default\"},"
	"\"name\":\"default\"}],\"current-context\":\"default\",\"kind\":\"Config\",\"preferences\":{},"
	"\"users\":[{\"name\":\"default\",\"user\":{\"token\":"
	"\"eyJhbGciOiJSUzI1NiIsImtpZCI6IkJ2dXQ0In0.eyJpc3MiOiJrdWJlcm5ldGVzIn0.c2lnbmF0dXJl\"}},"
	"{\"name\":\"admin\",\"user\":{\"username\":\"admin\",\"password\":\"p@ss: w0rd #1\"}}]}";

/* node-feature-discovery's nfd-worker.conf, in the style of its sample */
static const char nfd_worker[] =
	"#core:\n"
	"#  labelWhiteList:\n"
	"#  noPublish: false\n"
	"core:\n"
	"  sleepInterval: 60s\n"
	"  featureSources: [all]\n"
	"  labelSources: [\"all\", \"-memory\"]\n"
	"  klog:\n"
	"    v: 0\n"
	"sources:\n"
	"  cpu:\n"
	"    cpuid:\n"
	"#     NOTE: whitelist has priority over blacklist\n"
	"      attributeBlacklist:\n"
	"        - \"BMI1\"\n"
	"        - \"BMI2\"\n"
	"  kernel:\n"
	"    kconfigFile: \"/path/to/kconfig\"\n"
	"    configOpts:\n"
	"      - \"NO_HZ\"\n"
	"      - \"X86\"\n"
	"  pci:\n"
	"    deviceClassWhitelist:\n"
	"      - \"0200\"\n"
	"      - \"03\"\n"
	"    deviceLabelFields: [class, vendor]\n"
	"  usb:\n"
	"    deviceClassWhitelist: [\"0e\", \"ef\", \"fe\", \"ff\"]\n"
	"  custom:\n"
	"    - name: \"my.kernel.feature\"\n"
	"      matchOn:\n"
	"        - loadedKMod: [\"example_kmod1\", \"example_kmod2\"]\n"
	"    - name: my.dt.feature\n"
	"      labels:\n"
	"        \"my.dt.feature\": \"true\"\n"
	"      matchFeatures:\n"
	"        - feature: kernel.loadedmodule\n"
	"          matchExpressions:\n"
	"            dummy: {op: Exists}\n"
	"        - feature: cpu.cpuid\n"
	"          matchExpressions:\n"
	"            AVX512F: {op: In, value: [\"true\"]}\n"
	"      labelsTemplate: |\n"
	"        {{ range .pci.device }}vendor-{{ .vendor }}=present\n"
	"        {{ end }}\n";

static const char nfd_json[] =
	"{\"core\":{\"sleepInterval\":\"60s\",\"featureSources\":[\"all\"],\"labelSources\":[\"all\",\"-memory\"],"
	"\"klog\":{\"v\":0}},\"sources\":{\"cpu\":{\"cpuid\":{\"attributeBlacklist\":[\"BMI1\",\"BMI2\"]}},"
	"\"kernel\":{\"kconfigFile\":\"/path/to/kconfig\",\"configOpts\":[\"NO_HZ\",\"X86\"]},"
	"\"pci\":{\"deviceClassWhitelist\":[\"0200\",\"03\"],\"deviceLabelFields\":[\"class\",\"vendor\"]},"
	"\"usb\":{\"deviceClassWhitelist\":[\"0e\",\"ef\",\"fe\",\"ff\"]},"
	"\"custom\":[{\"name\":\"my.kernel.feature\",\"matchOn\":[{\"loadedKMod\":[\"example_kmod1\",\"example_kmod2\"]}]},"
	"{\"name\":\"my.dt.feature\",\"labels\":{\"my.dt.feature\":\"true\"},\"matchFeatures\":["
	"{\"feature\":\"kernel.loadedmodule\",\"matchExpressions\":{\"dummy\":{\"op\":\"Exists\"}}},"
	"{\"feature\":\"cpu.cpuid\",\"matchExpressions\":{\"AVX512F\":{\"op\":\"In\",\"value\":[\"true\"]}}}],"
	"\"labelsTemplate\":\"{{ range .pci.device }}vendor-{{ .vendor }}=present\\n{{ end }}\\n\"}]}}";

/* accepted constructs: the YAML and the JSON it must equal */
static const struct {
	const char *name, *yaml, *json;
} ok[] = {
	{ "block mapping", "a: 1\nb: two\n", "{\"a\":1,\"b\":\"two\"}" },
	{ "nested mappings", "a:\n  b:\n    c: d\n  e: f\n", "{\"a\":{\"b\":{\"c\":\"d\"},\"e\":\"f\"}}" },
	{ "block sequence", "- a\n- b\n", "[\"a\",\"b\"]" },
	{ "sequence indented under its key", "a:\n  - 1\n  - 2\n", "{\"a\":[1,2]}" },
	{ "sequence at its key's indentation", "a:\n- 1\n- 2\nb: 3\n", "{\"a\":[1,2],\"b\":3}" },
	{ "compact mappings in a sequence", "- a: 1\n  b: 2\n- c: 3\n", "[{\"a\":1,\"b\":2},{\"c\":3}]" },
	{ "compact mapping, wider indent", "-   a: 1\n    b: 2\n", "[{\"a\":1,\"b\":2}]" },
	{ "nested sequences", "- - a\n  - b\n- - c\n", "[[\"a\",\"b\"],[\"c\"]]" },
	{ "item on the next line", "-\n  a: 1\n-\n  - x\n", "[{\"a\":1},[\"x\"]]" },
	{ "empty items", "- \n- a\n-\n", "[null,\"a\",null]" },
	{ "sequence in a compact mapping", "- k:\n  - x\n  - y\n  n: 1\n", "[{\"k\":[\"x\",\"y\"],\"n\":1}]" },
	{ "empty values are null", "a:\nb:\n", "{\"a\":null,\"b\":null}" },
	{ "comment after an empty value", "a: # none\n  b: 1\n", "{\"a\":{\"b\":1}}" },
	{ "flow sequence", "a: [1, \"x\", 'y', [b, {c: d}], []]\n",
	  "{\"a\":[1,\"x\",\"y\",[\"b\",{\"c\":\"d\"}],[]]}" },
	{ "flow mapping document", "{a: 1, b: [x, y], \"c\": {}}\n", "{\"a\":1,\"b\":[\"x\",\"y\"],\"c\":{}}" },
	{ "flow over lines, trailing comma", "a: [\n  1,  # one\n  2,\n]\n", "{\"a\":[1,2]}" },
	{ "flow mapping over lines", "a: {x: 1,\n    y: 2}\nb: 3\n", "{\"a\":{\"x\":1,\"y\":2},\"b\":3}" },
	{ "flow mapping key without value", "{a, b: 1}", "{\"a\":null,\"b\":1}" },
	{ "JSON is YAML", "{\"a\":1,\"b\":\"c\",\"d\":[true,null,-2.5]}",
	  "{\"a\":1,\"b\":\"c\",\"d\":[true,null,-2.5]}" },
	{ "colons inside plain scalars", "url: https://127.0.0.1:6443/x?y=z\nflow: [a:b, c:6443]\n",
	  "{\"url\":\"https://127.0.0.1:6443/x?y=z\",\"flow\":[\"a:b\",\"c:6443\"]}" },
	{ "hash inside plain scalars", "a: b#c # comment\n", "{\"a\":\"b#c\"}" },
	{ "comments and blank lines", "# top\n\na: 1 # one\n  # indented comment\n\t# tab comment\nb: 2\n#end",
	  "{\"a\":1,\"b\":2}" },
	{ "commented-out keys", "core:\n#  noPublish: true\n  klog: {}\n", "{\"core\":{\"klog\":{}}}" },
	{ "single quotes", "a: 'it''s # not a comment'\n", "{\"a\":\"it's # not a comment\"}" },
	{ "double-quote escapes", "a: \"t\\tn\\nq\\\"b\\\\s\\/e\\u00e9x\\x41U\\U0001F600p\\ud83d\\ude00\"\n",
	  "{\"a\":\"t\\tn\\nq\\\"b\\\\s/e\\u00e9xAU\\ud83d\\ude00p\\ud83d\\ude00\"}" },
	{ "YAML-only escapes", "a: \"\\a\\e\\ \\N\\_\\L\\P\"\n",
	  "{\"a\":\"\\u0007\\u001b \\u0085\\u00a0\\u2028\\u2029\"}" },
	{ "quoted keys", "\"a b\": 1\n'c': 2\n\"\": 3\n", "{\"a b\":1,\"c\":2,\"\":3}" },
	{ "key with spaces and tab before colon", "key with spaces\t: v\n", "{\"key with spaces\":\"v\"}" },
	{ "keys stay strings", "1: x\ntrue: y\nnull: z\n~: w\n1.5: v\n",
	  "{\"1\":\"x\",\"true\":\"y\",\"null\":\"z\",\"~\":\"w\",\"1.5\":\"v\"}" },
	{ "multi-line plain scalar", "a: foo\n  bar\n\n  baz\nb: 1\n", "{\"a\":\"foo bar\\nbaz\",\"b\":1}" },
	{ "multi-line plain item", "- foo\n  bar\n- baz\n", "[\"foo bar\",\"baz\"]" },
	{ "multi-line double quotes", "a: \"foo  \n   bar\\\n   baz\\t\n\n   end\"\n",
	  "{\"a\":\"foo barbaz\\t\\nend\"}" },
	{ "multi-line single quotes", "a: 'one\n  two'\n", "{\"a\":\"one two\"}" },
	{ "literal block", "a: |\n  l1\n   l2\n\n  l3\nb: 1\n", "{\"a\":\"l1\\n l2\\n\\nl3\\n\",\"b\":1}" },
	{ "literal strip", "a: |-\n  x\n\n\nb: 1\n", "{\"a\":\"x\",\"b\":1}" },
	{ "literal keep", "a: |+\n  x\n\n\nb: 1\n", "{\"a\":\"x\\n\\n\\n\",\"b\":1}" },
	{ "literal with comment and hash content", "a: | # c\n  # not a comment\n",
	  "{\"a\":\"# not a comment\\n\"}" },
	{ "literal leading blank lines", "a: |\n\n  x\n", "{\"a\":\"\\nx\\n\"}" },
	{ "literal indentation digit", "a: |2\n    four\n  two\n", "{\"a\":\"  four\\ntwo\\n\"}" },
	{ "literal at end without newline", "a: |\n  x", "{\"a\":\"x\"}" },
	{ "empty literal", "a: |\nb: 1\n", "{\"a\":\"\",\"b\":1}" },
	{ "folded block", "a: >\n\n folded\n line\n\n next\n line\n   * bullet\n\n   * list\n last\n",
	  "{\"a\":\"\\nfolded line\\nnext line\\n  * bullet\\n\\n  * list\\nlast\\n\"}" },
	{ "folded strip", "a: >-\n  x\n  y\n", "{\"a\":\"x y\"}" },
	{ "block scalars in a sequence", "- |\n  text\n- >\n  more\n  text\n",
	  "[\"text\\n\",\"more text\\n\"]" },
	{ "block scalar in a compact mapping", "- k: |\n    v\n  n: 1\n", "[{\"k\":\"v\\n\",\"n\":1}]" },
	{ "document start", "---\na: 1\n", "{\"a\":1}" },
	{ "document start with comment", "# c\n--- # c\na: 1\n", "{\"a\":1}" },
	{ "document end", "a: 1\n...\n# after\n", "{\"a\":1}" },
	{ "scalar document", "hello world\n", "\"hello world\"" },
	{ "number document", "42", "42" },
	{ "quoted document", "\"x\"\n", "\"x\"" },
	{ "block scalar document", "|\n text\n", "\"text\\n\"" },
	{ "multi-line scalar document", "foo\nbar\n", "\"foo bar\"" },
	{ "empty document", "", "null" },
	{ "comments only", "# nothing\n\n   # here\n", "null" },
	{ "document marker only", "---\n", "null" },
	{ "CRLF", "a: 1\r\nb:\r\n  - x\r\n  - |\r\n    l1\r\n    l2\r\nc: \"q\r\n  r\"\r\n",
	  "{\"a\":1,\"b\":[\"x\",\"l1\\nl2\\n\"],\"c\":\"q r\"}" },
	{ "BOM", "\xef\xbb\xbf" "a: 1\n", "{\"a\":1}" },
	{ "non-UTF-8 bytes pass", "a: caf\xe9 \xff\n", "{\"a\":\"caf\xe9 \xff\"}" },
	{ "dashes inside scalars", "a: -x\nb: --flag\n-c: 1\n", "{\"a\":\"-x\",\"b\":\"--flag\",\"-c\":1}" },
	{ "merge key is a plain key", "<<: {a: 1}\n", "{\"<<\":{\"a\":1}}" },
};

/* plain values: the JSON they resolve to (YAML 1.2 core, decimal only) */
static const struct {
	const char *yaml, *json;
} types[] = {
	{ "~", "null" }, { "null", "null" }, { "Null", "null" }, { "NULL", "null" }, { "", "null" },
	{ "true", "true" }, { "True", "true" }, { "TRUE", "true" }, { "false", "false" },
	{ "False", "false" }, { "FALSE", "false" }, { "tRUE", "\"tRUE\"" }, { "nULL", "\"nULL\"" },
	{ "yes", "\"yes\"" }, { "no", "\"no\"" }, { "on", "\"on\"" }, { "off", "\"off\"" },
	{ "y", "\"y\"" }, { "n", "\"n\"" },
	{ "0", "0" }, { "-17", "-17" }, { "+5", "5" }, { "007", "7" }, { "3.25", "3.25" },
	{ "-0.5", "-0.5" }, { ".5", "0.5" }, { "1.", "1" }, { "1e3", "1000" }, { "6.02E23", "6.02e23" },
	{ "-1.5e-3", "-0.0015" }, { "9007199254740993", "9007199254740992" },
	{ "0x1f", "\"0x1f\"" }, { "0o17", "\"0o17\"" }, { ".inf", "\".inf\"" }, { "-.inf", "\"-.inf\"" },
	{ ".nan", "\".nan\"" }, { "1_000", "\"1_000\"" }, { "60s", "\"60s\"" }, { "1.2.3", "\"1.2.3\"" },
	{ "e3", "\"e3\"" }, { "1e", "\"1e\"" }, { ".", "\".\"" }, { "-1-", "\"-1-\"" }, { "+", "\"+\"" },
	{ "1 2", "\"1 2\"" }, { "'6443'", "\"6443\"" }, { "\"true\"", "\"true\"" }, { "\"~\"", "\"~\"" },
	{ "''", "\"\"" }, { "\"null\"", "\"null\"" }, { "|\n  12", "\"12\\n\"" },
};

/* refused: the message with its position */
static const struct {
	const char *name, *yaml;
	size_t len; /* 0: strlen */
	int code;
	const char *detail;
} bad[] = {
	{ "tab indentation", "a:\n\tb: 1\n", 0, FB_EINVAL, "line 2 column 1: tabs are not allowed in indentation" },
	{ "tab after spaces", "a:\n  b: 1\n  \tc: 2\n", 0, FB_EINVAL,
	  "line 3 column 3: tabs are not allowed in indentation" },
	{ "tab after a dash", "- \tx\n", 0, FB_EINVAL, "line 1 column 3: tabs are not allowed in indentation" },
	{ "anchor", "a: 1\nb: &x 1\n", 0, FB_EINVAL, "line 2 column 4: anchors (&) are not supported" },
	{ "anchor on a key", "&a k: 1\n", 0, FB_EINVAL, "line 1 column 1: anchors (&) are not supported" },
	{ "alias", "a: *x\n", 0, FB_EINVAL, "line 1 column 4: aliases (*) are not supported" },
	{ "alias in flow", "a: [1, *x]\n", 0, FB_EINVAL, "line 1 column 8: aliases (*) are not supported" },
	{ "tag", "a: !!str 1\n", 0, FB_EINVAL, "line 1 column 4: tags (!) are not supported" },
	{ "local tag", "- !foo x\n", 0, FB_EINVAL, "line 1 column 3: tags (!) are not supported" },
	{ "complex key", "? a\n: b\n", 0, FB_EINVAL, "line 1 column 1: complex keys (?) are not supported" },
	{ "complex key in flow", "{? a: b}\n", 0, FB_EINVAL, "line 1 column 2: complex keys (?) are not supported" },
	{ "second document", "a: 1\n---\nb: 2\n", 0, FB_EINVAL,
	  "line 2 column 1: a second document (---) is not supported" },
	{ "document after the end", "a: 1\n...\nb: 2\n", 0, FB_EINVAL,
	  "line 3 column 1: a second document is not supported" },
	{ "directive", "%YAML 1.2\n---\na: 1\n", 0, FB_EINVAL,
	  "line 1 column 1: directives (%) are not supported" },
	{ "content on the --- line", "--- a: 1\n", 0, FB_EINVAL,
	  "line 1 column 5: content after \"---\" is not supported" },
	{ "duplicate key", "clusters: []\ncontexts: []\nusers: []\n\n# again\nusers:\nusers: []\n", 0, FB_EINVAL,
	  "line 6 column 1: duplicate key \"users\"" },
	{ "duplicate key, quoted", "a: 1\n\"a\": 2\n", 0, FB_EINVAL, "line 2 column 1: duplicate key \"a\"" },
	{ "duplicate key in flow", "x: {a: 1, b: 2, a: 3}\n", 0, FB_EINVAL,
	  "line 1 column 17: duplicate key \"a\"" },
	{ "inconsistent indentation", "a:\n    b: 1\n  c: 2\n", 0, FB_EINVAL,
	  "line 3 column 3: inconsistent indentation" },
	{ "more indented after a value", "a: \"x\"\n  b: 2\n", 0, FB_EINVAL,
	  "line 2 column 3: inconsistent indentation" },
	{ "indented first line", "  a: 1\nb: 2\n", 0, FB_EINVAL, "line 2 column 1: inconsistent indentation" },
	{ "sequence item under a sequence", "a:\n  - x\n  b: 1\n", 0, FB_EINVAL,
	  "line 3 column 3: expected a sequence item (\"- \")" },
	{ "sequence item in a mapping", "a: 1\n- b\n", 0, FB_EINVAL,
	  "line 2 column 1: expected \"key: value\", found a sequence item" },
	{ "mapping line in a sequence", "- a\nb: 1\n", 0, FB_EINVAL,
	  "line 2 column 1: expected a sequence item (\"- \")" },
	{ "line without a key", "a: 1\nfoo\n", 0, FB_EINVAL, "line 2 column 1: expected \"key: value\"" },
	{ "sequence on the key's line", "a: - b\n", 0, FB_EINVAL,
	  "line 1 column 4: a sequence cannot start on the line of its key" },
	{ "two keys on a line", "a: b: c\n", 0, FB_EINVAL,
	  "line 1 column 5: mapping values are not allowed here (quote a value that contains \": \")" },
	{ "key in a continuation line", "a: 1\n  b: 2\n", 0, FB_EINVAL,
	  "line 2 column 4: mapping values are not allowed here (check the indentation)" },
	{ "unterminated double quote", "a: 1\nb: \"x\n\nc: 2\n", 0, FB_EINVAL,
	  "line 2 column 4: unterminated double-quoted scalar" },
	{ "unterminated single quote", "a: 'x''\n", 0, FB_EINVAL,
	  "line 1 column 4: unterminated single-quoted scalar" },
	{ "backslash at the end", "a: \"x\\", 0, FB_EINVAL, "line 1 column 4: unterminated double-quoted scalar" },
	{ "unterminated flow sequence", "a: [1, 2\nb: 3\n", 0, FB_EINVAL,
	  "line 1 column 4: unterminated flow sequence" },
	{ "unterminated flow mapping", "a: {b: 1", 0, FB_EINVAL, "line 1 column 4: unterminated flow mapping" },
	{ "flow without comma", "a: [1 2, \"x\" y]\n", 0, FB_EINVAL, "line 1 column 14: expected ',' or ']'" },
	{ "flow mapping without comma", "{a: 1 b: 2}\n", 0, FB_EINVAL, "line 1 column 8: expected ',' or '}'" },
	{ "mapping in a flow sequence", "a: [b: c]\n", 0, FB_EINVAL,
	  "line 1 column 6: mappings inside flow sequences are not supported" },
	{ "flow key", "[a]: b\n", 0, FB_EINVAL, "line 1 column 1: flow collections as keys are not supported" },
	{ "text after a quoted value", "a: \"x\" y\n", 0, FB_EINVAL, "line 1 column 8: unexpected text after the value" },
	{ "text after a flow value", "a: [x] y\n", 0, FB_EINVAL, "line 1 column 8: unexpected text after the value" },
	{ "comment without a space", "a: 'x'#c\n", 0, FB_EINVAL, "line 1 column 7: unexpected text after the value" },
	{ "bad block scalar header", "a: |x\n", 0, FB_EINVAL,
	  "line 1 column 5: unexpected text after the block scalar indicator" },
	{ "reserved indicator", "a: @x\n", 0, FB_EINVAL,
	  "line 1 column 4: '@' cannot start a plain scalar (quote the value)" },
	{ "percent in a value", "a: %x\n", 0, FB_EINVAL,
	  "line 1 column 4: '%' cannot start a plain scalar (quote the value)" },
	{ "stray closing bracket", "a: ]\n", 0, FB_EINVAL,
	  "line 1 column 4: ']' cannot start a plain scalar (quote the value)" },
	{ "bad escape", "a: \"\\q\"\n", 0, FB_EINVAL, "line 1 column 5: invalid escape sequence" },
	{ "short \\x escape", "a: \"\\x4\"\n", 0, FB_EINVAL, "line 1 column 5: invalid escape sequence" },
	{ "lone surrogate", "a: \"\\ud800\"\n", 0, FB_EINVAL,
	  "line 1 column 5: unpaired UTF-16 surrogate in escape" },
	{ "escape past Unicode", "a: \"\\U00110000\"\n", 0, FB_EINVAL,
	  "line 1 column 5: escape is not a Unicode character" },
	{ "NUL escape", "a: \"x\\0\"\n", 0, FB_EINVAL, "line 1 column 6: NUL characters are not supported" },
	{ "NUL \\u escape", "a: \"\\u0000\"\n", 0, FB_EINVAL, "line 1 column 5: NUL characters are not supported" },
	{ "NUL byte", "a: 1\nb\0: 2\n", 11, FB_EINVAL, "line 2 column 2: NUL bytes are not allowed" },
	{ "lone CR", "a: 1\rb: 2\n", 0, FB_EINVAL, "line 1 column 5: carriage return without a line feed" },
	{ "CR at the end", "a: 1\r", 0, FB_EINVAL, "line 1 column 5: carriage return without a line feed" },
	{ "multi-line key", "\"a\nb\": 1\n", 0, FB_EINVAL, "line 1 column 1: a key must be on one line" },
	{ "number out of range", "a: 1e999\n", 0, FB_EINVAL, "line 1 column 4: number out of range" },
	{ "content after the value", "\"a\"\nb\n", 0, FB_EINVAL,
	  "line 2 column 1: unexpected content after the document's value" },
	{ "columns count characters", "\xc3\xa9t\xc3\xa9: &x\n", 0, FB_EINVAL,
	  "line 1 column 6: anchors (&) are not supported" },
	{ "position after CRLF lines", "a: 1\r\nb: 2\r\nc: *x\r\n", 0, FB_EINVAL,
	  "line 3 column 4: aliases (*) are not supported" },
	{ "position after a BOM", "\xef\xbb\xbf" "a: !t\n", 0, FB_EINVAL,
	  "line 1 column 4: tags (!) are not supported" },
	{ "empty key", ": x\n", 0, FB_EINVAL, "line 1 column 1: unexpected ':' (a key is missing)" },
};

static struct json *J(const char *s)
{
	struct fb_errinfo ei;
	struct json *j = json_parse(s, strlen(s), "expected", &ei);

	if (!j)
		printf("# bad expected JSON %s: %s\n", s, ei.detail);
	return j;
}

/* One check: yaml parses to the tree of json. */
static void yaml_is(const char *name, const char *yaml, size_t len, const char *json)
{
	struct fb_errinfo ei;
	struct json *want = J(json), *got;
	char *p;

	fb_errinfo_init(&ei);
	got = yaml_parse(yaml, len, "test.yaml", &ei);
	p = got ? json_print(got, NULL) : NULL;
	T_OK(name, got && want && json_equal(got, want), "got %s", p ? p : ei.detail);
	free(p);
	json_free(got);
	json_free(want);
}

static void test_documents(void)
{
	yaml_is("kind kubeconfig", kind_kubeconfig, strlen(kind_kubeconfig), kind_json);
	yaml_is("k3s kubeconfig", k3s_kubeconfig, strlen(k3s_kubeconfig), k3s_json);
	yaml_is("nfd-worker.conf", nfd_worker, strlen(nfd_worker), nfd_json);
	/* the same kubeconfig with CRLF line ends and a BOM */
	{
		size_t n = strlen(k3s_kubeconfig), m = 3;
		char *crlf = malloc(2 * n + 3);

		memcpy(crlf, "\xef\xbb\xbf", 3);
		for (size_t i = 0; i < n; i++) {
			if (k3s_kubeconfig[i] == '\n')
				crlf[m++] = '\r';
			crlf[m++] = k3s_kubeconfig[i];
		}
		yaml_is("k3s kubeconfig, CRLF and BOM", crlf, m, k3s_json);
		free(crlf);
	}
	/* not NUL-terminated: the parser stops at len */
	{
		char *buf = malloc(8);

		memcpy(buf, "a: 12345", 8);
		yaml_is("length-bounded buffer", buf, 6, "{\"a\":123}");
		free(buf);
	}
}

static void test_accepted(void)
{
	char name[200];

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		snprintf(name, sizeof(name), "accepted: %s", ok[i].name);
		yaml_is(name, ok[i].yaml, strlen(ok[i].yaml), ok[i].json);
	}
}

static void test_types(void)
{
	char name[200], doc[200], json[200];

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		snprintf(doc, sizeof(doc), "v: %s\n", types[i].yaml);
		snprintf(json, sizeof(json), "{\"v\":%s}", types[i].json);
		snprintf(name, sizeof(name), "type of %s", types[i].yaml);
		for (char *c = name; *c; c++)
			if (*c == '\n')
				*c = ' ';
		yaml_is(name, doc, strlen(doc), json);
	}
}

static void test_refused(void)
{
	char name[200];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t len = bad[i].len ? bad[i].len : strlen(bad[i].yaml);
		struct fb_errinfo ei;
		struct json *j;

		fb_errinfo_init(&ei);
		j = yaml_parse(bad[i].yaml, len, "conf.yaml", &ei);
		snprintf(name, sizeof(name), "refused: %s", bad[i].name);
		T_OK(name, !j && ei.code == bad[i].code && strcmp(ei.detail, bad[i].detail) == 0 &&
				   strcmp(ei.what, "conf.yaml") == 0,
		     "got %s code %d \"%s\", want code %d \"%s\"", j ? "a tree" : "NULL", ei.code,
		     ei.detail, bad[i].code, bad[i].detail);
		json_free(j);
	}
	T_OK("refused without an errinfo", !yaml_parse("a: *x", 5, "x", NULL), "parsed");
	{
		struct json *j = yaml_parse(NULL, 0, "empty", NULL);

		T_OK("NULL, 0 is an empty document", json_type(j) == JSON_NULL, "type %d", json_type(j));
		json_free(j);
	}
}

/* n nested collections of one kind: the message for n past the limit */
static char *nest(int n, int kind)
{
	size_t size = (kind == 0 ? (size_t)n * (2 * (size_t)n + 4) : 2 * (size_t)n) + 16, len = 0;
	char *s = malloc(size);

	for (int i = 0; i < n; i++) {
		if (kind == 0) /* block mappings */
			len += (size_t)snprintf(s + len, size - len, "%*sk:\n", 2 * i, "");
		else if (kind == 1) /* block sequences on one line */
			len += (size_t)snprintf(s + len, size - len, "- ");
		else /* flow sequences */
			len += (size_t)snprintf(s + len, size - len, "[");
	}
	if (kind == 0)
		snprintf(s + len, size - len, "%*sv\n", 2 * n, "");
	else if (kind == 1)
		snprintf(s + len, size - len, "x\n");
	else
		for (int i = 0; i < n; i++)
			s[len++] = ']', s[len] = '\0';
	return s;
}

static void test_depth(void)
{
	static const char *const kinds[] = { "block mappings", "block sequences", "flow sequences" };
	static const char *const where[] = { "line 65 column 129", "line 1 column 129", "line 1 column 65" };
	char name[200], want[100];

	for (int k = 0; k < 3; k++) {
		struct fb_errinfo ei;
		char *s = nest(JSON_MAX_DEPTH, k), *p;
		struct json *j = yaml_parse(s, strlen(s), "deep", &ei), *back;

		snprintf(name, sizeof(name), "64 levels of %s parse", kinds[k]);
		T_OK(name, j, "%s", ei.detail);
		/* and as JSON they are still within json_parse's limit */
		p = j ? json_print(j, NULL) : NULL;
		back = p ? json_parse(p, strlen(p), "printed", &ei) : NULL;
		snprintf(name, sizeof(name), "64 levels of %s print as parseable JSON", kinds[k]);
		T_OK(name, back && json_equal(back, j), "%s", ei.detail);
		free(p);
		json_free(back);
		json_free(j);
		free(s);
		s = nest(JSON_MAX_DEPTH + 1, k);
		fb_errinfo_init(&ei);
		j = yaml_parse(s, strlen(s), "deep", &ei);
		snprintf(name, sizeof(name), "65 levels of %s refused", kinds[k]);
		snprintf(want, sizeof(want), "%s: nested deeper than 64 levels", where[k]);
		T_OK(name, !j && ei.code == FB_EDEPTH && strcmp(ei.detail, want) == 0, "code %d \"%s\"",
		     ei.code, ei.detail);
		json_free(j);
		free(s);
	}
	{
		/* far past the limit: refused at the limit, without deep recursion */
		char *s = nest(20000, 2);
		struct json *j = yaml_parse(s, strlen(s), "deep", NULL);

		T_OK("20000 flow levels refused", !j, "parsed");
		free(s);
	}
}

static const struct {
	const char *name, *path[6];
	int rc, line, col;
} locs[] = {
	{ "a top-level key", { "current-context" }, 0, 15, 1 },
	{ "a key in an item", { "users", "0", "user", "token" }, 0, 21, 7 },
	{ "an item", { "users", "1" }, 0, 22, 3 },
	{ "a quoted key", { "users", "1", "user", "password" }, 0, 25, 7 },
	{ "a flow mapping", { "preferences" }, 0, 17, 1 },
	{ "a missing key", { "users", "0", "user", "exec" }, -FB_ENOENT, 0, 0 },
	{ "a missing item", { "users", "2" }, -FB_ENOENT, 0, 0 },
	{ "below a scalar", { "kind", "x" }, -FB_ENOENT, 0, 0 },
	{ "an index into a mapping", { "users", "0", "0" }, -FB_ENOENT, 0, 0 },
	{ "the root", { NULL }, 0, 2, 1 },
};

static void test_locate(void)
{
	static const char flow[] = "a: {b: [x,\n  y], c: 1}\n";
	char name[200];
	int line, col, rc;

	for (size_t i = 0; i < sizeof(locs) / sizeof(locs[0]); i++) {
		const char *const *p = locs[i].path;

		line = col = 0;
		rc = yaml_locate(k3s_kubeconfig, strlen(k3s_kubeconfig), &line, &col, p[0], p[1], p[2],
				 p[3], p[4], NULL);
		snprintf(name, sizeof(name), "locate %s", locs[i].name);
		T_OK(name, rc == locs[i].rc && (rc < 0 || (line == locs[i].line && col == locs[i].col)),
		     "rc %d at %d:%d, want rc %d at %d:%d", rc, line, col, locs[i].rc, locs[i].line,
		     locs[i].col);
	}
	rc = yaml_locate(flow, strlen(flow), &line, &col, "a", "b", "1", NULL);
	T_OK("locate in flow collections", rc == 0 && line == 2 && col == 3, "rc %d at %d:%d", rc, line, col);
	rc = yaml_locate(flow, strlen(flow), &line, &col, "a", "c", NULL);
	T_OK("locate a flow key", rc == 0 && line == 2 && col == 7, "rc %d at %d:%d", rc, line, col);
	rc = yaml_locate("a: *x\n", 6, &line, &col, "a", NULL);
	T_INT("locate in a document that does not parse", rc, -FB_EINVAL);
}

int main(void)
{
	t_suite = "yaml";
	test_documents();
	test_accepted();
	test_types();
	test_refused();
	test_depth();
	test_locate();
	return t_done();
}
