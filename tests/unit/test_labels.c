/* labels: Kubernetes label syntax and the devicetree name sanitiser. */
#include "t.h"

#include "../../core/err.h"
#include "../../core/labels.h"

#define S63 "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijk"

static const struct {
	const char *s;
	int name, value;
} names[] = {
	{ "a", 1, 1 }, { "", 0, 1 }, { "-a", 0, 0 }, { "a-", 0, 0 }, { "a.b_c-d", 1, 1 },
	{ S63, 1, 1 }, { S63 "l", 0, 0 }, { "a/b", 0, 0 }, { "a b", 0, 0 }, { "_a", 0, 0 },
	{ "A9", 1, 1 }, { "a+b", 0, 0 }, { "true", 1, 1 },
};

static const struct {
	const char *s;
	int ok;
} prefixes[] = {
	{ "beta.devicetree.org", 1 }, { "feature.node.kubernetes.io", 1 }, { "a", 1 },
	{ "Beta.x", 0 }, { "a..b", 0 }, { ".a", 0 }, { "a.", 0 }, { "a-.b", 0 }, { "a-b.c", 1 },
	{ "", 0 }, { "a_b", 0 },
};

static const struct {
	const char *s;
	int ok;
} keys[] = {
	{ "beta.devicetree.org/arm-cortex-a72", 1 }, { "noprefix", 1 }, { "/x", 0 },
	{ "a/b/c", 0 }, { "x.io/", 0 }, { "X.io/a", 0 }, { "x.io/" S63, 1 }, { "x.io/" S63 "l", 0 },
};

static const struct {
	const char *in;
	int rc; /* length, 0 (skip) or -FB_E2BIG */
	const char *out;
} dt[] = {
	{ "arm,cortex-a72", 14, "arm-cortex-a72" },
	{ "xlnx,zynq-7000", 16, "xilinx-zynq-7000" },
	{ "xlnx", 4, "xlnx" },
	{ "xlnxx,foo", 9, "xlnxx-foo" },
	{ "foo,xlnx", 8, "foo-xlnx" },
	{ "arm,vexpress,v2p-ca15,tc1", 25, "arm-vexpress-v2p-ca15-tc1" },
	{ "solidrun,cubox-i/dl", 19, "solidrun-cubox-i_dl" },
	{ "fsl,qoriq-rcpm-2.1+", 18, "fsl-qoriq-rcpm-2.1" },
	{ " jedec,spi-nor", 13, "jedec-spi-nor" },
	{ "pwm-fan", 7, "pwm-fan" },
	{ "a b", 3, "a_b" },
	{ "caf\xc3\xa9,x", 7, "caf__-x" },
	{ ",,", 0, "" },
	{ "+", 0, "" },
	{ "", 0, "" },
	{ S63, 63, S63 },
	{ S63 "___", 63, S63 },
	{ "___" S63 "+", 63, S63 },
	{ S63 "l", -FB_E2BIG, "" },
	{ "xlnx," S63, -FB_E2BIG, "" },
};

int main(void)
{
	char name[200], out[64];

	t_suite = "labels";
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(name, sizeof(name), "valid name '%s'", names[i].s);
		T_INT(name, labels_valid_name(names[i].s, strlen(names[i].s)), names[i].name);
		snprintf(name, sizeof(name), "valid value '%s'", names[i].s);
		T_INT(name, labels_valid_value(names[i].s, strlen(names[i].s)), names[i].value);
	}
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		snprintf(name, sizeof(name), "valid prefix '%s'", prefixes[i].s);
		T_INT(name, labels_valid_prefix(prefixes[i].s, strlen(prefixes[i].s)), prefixes[i].ok);
	}
	{
		char p[300];

		memset(p, 'a', sizeof(p));
		for (int i = 63; i < 253; i += 64)
			p[i] = '.';
		T_INT("prefix of 253 characters", labels_valid_prefix(p, 253), 1);
		T_INT("prefix of 254 characters", labels_valid_prefix(p, 254), 0);
	}
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		snprintf(name, sizeof(name), "valid key '%.80s'", keys[i].s);
		T_INT(name, labels_valid_key(keys[i].s), keys[i].ok);
	}
	for (size_t i = 0; i < sizeof(dt) / sizeof(dt[0]); i++) {
		ssize_t rc = labels_dt_name(dt[i].in, strlen(dt[i].in), out, sizeof(out));

		snprintf(name, sizeof(name), "dt name '%.80s'", dt[i].in);
		T_OK(name, rc == dt[i].rc && (rc < 0 || strcmp(out, dt[i].out) == 0),
		     "rc=%zd out=\"%s\", want %d \"%s\"", rc, rc < 0 ? "" : out, dt[i].rc, dt[i].out);
		if (rc > 0) {
			snprintf(name, sizeof(name), "dt name '%.80s' is a valid label name", dt[i].in);
			T_INT(name, labels_valid_name(out, (size_t)rc), 1);
		}
	}
	{
		char small[8];

		T_INT("dt name longer than the buffer", labels_dt_name("arm,cortex-a72", 14, small, sizeof(small)), -FB_E2BIG);
		T_INT("dt name of embedded NUL length", labels_dt_name("arm\0x", 5, out, sizeof(out)), 5);
	}
	return t_done();
}
