/* intern: one copy per distinct string, the same id for the same string,
 * references counted (the last put frees and the id is reused), ids not
 * held ignored, and a table that churns through many distinct strings
 * (as a node rewriting its NodeFeature with new values) stays as big as
 * what is held. */
#include "t.h"

#include "../../core/intern.h"
#include "../../core/strhash.h"

#include <stdio.h>
#include <string.h>

/* Steps over one table: add (the id it gave is remembered under slot),
 * put (the id in slot), then what must hold. */
enum { ADD, PUT };
static const struct {
	int op, slot;
	const char *str;  /* ADD: the string */
	int same_as;      /* ADD: the slot whose id it must equal, -1 none */
	size_t live;      /* strings held after the step */
	const char *gone; /* a string that must not be held after it */
} steps[] = {
	{ ADD, 0, "feature.node.kubernetes.io/cpu-cpuid.AVX", -1, 1, NULL },
	{ ADD, 1, "true", -1, 2, NULL },
	{ ADD, 2, "feature.node.kubernetes.io/cpu-cpuid.AVX", 0, 2, NULL },
	{ ADD, 3, "", -1, 3, NULL },
	{ ADD, 4, "true", 1, 3, NULL },
	{ PUT, 0, NULL, -1, 3, NULL },
	{ PUT, 2, NULL, -1, 2, "feature.node.kubernetes.io/cpu-cpuid.AVX" },
	{ ADD, 5, "false", -1, 3, NULL },
	{ PUT, 1, NULL, -1, 3, NULL },
	{ PUT, 4, NULL, -1, 2, "true" },
	{ PUT, 3, NULL, -1, 1, "" },
	{ PUT, 5, NULL, -1, 0, "false" },
};

/* strhash is keyed: it differs from the same hash with a zero key (what an
 * attacker could compute), for every one of a few names (each equal with
 * probability 2^-64). A second exec of the binary would show the key is per
 * process, but the aarch64 unit tests run under qemu-user, where no exec of
 * this binary is possible without binfmt. */
static void test_strhash_keyed(void)
{
	static const char *const names[] = { "", "node-1", "feature.node.kubernetes.io/cpu-cpuid.AVX2", "true" };
	static const uint64_t zero[2];
	int keyed = 1;

	T_OK("strhash: the same string, the same hash", strhash("node-1") == strhash("node-1"), "differs");
	T_OK("strhash: another string, another hash", strhash("node-1") != strhash("node-2"), "equal");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		keyed &= strhash(names[i]) != strhash_key_(names[i], zero);
	T_OK("strhash: keyed (no name hashes as with a zero key)", keyed, "a name hashed as unkeyed");
}

int main(void)
{
	t_suite = "intern";
	test_strhash_keyed();
	{
		struct intern t;
		long id[8];
		char name[160];

		intern_init(&t);
		for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
			if (steps[i].op == ADD) {
				id[steps[i].slot] = intern_add(&t, steps[i].str);
				snprintf(name, sizeof(name), "step %zu: add \"%s\"", i, steps[i].str);
				T_OK(name, id[steps[i].slot] >= 0 &&
					   strcmp(intern_str(&t, (uint32_t)id[steps[i].slot]), steps[i].str) == 0 &&
					   intern_find(&t, steps[i].str) == id[steps[i].slot],
				     "id %ld", id[steps[i].slot]);
				if (steps[i].same_as >= 0) {
					snprintf(name, sizeof(name), "step %zu: the same id again", i);
					T_INT(name, id[steps[i].slot], id[steps[i].same_as]);
				}
			} else {
				intern_put(&t, (uint32_t)id[steps[i].slot]);
			}
			snprintf(name, sizeof(name), "step %zu: strings held", i);
			T_INT(name, t.live, steps[i].live);
			if (steps[i].gone) {
				snprintf(name, sizeof(name), "step %zu: \"%s\" gone", i, steps[i].gone);
				T_INT(name, intern_find(&t, steps[i].gone), -1);
			}
		}
		T_INT("empty: no bytes", t.bytes, 0);
		T_OK("empty: an id not held reads NULL", !intern_str(&t, 0) && !intern_str(&t, 12345), "%s", "a string");
		intern_put(&t, 12345); /* ignored */
		intern_put(&t, 0);     /* freed already: ignored */
		T_INT("puts of ids not held: still empty", t.live, 0);
		intern_free(&t);
	}
	{
		/* churn: 100000 distinct strings, never more than 64 held */
		struct intern t;
		long held[64];
		size_t most_ids = 0;
		char s[32];
		int ok = 1;

		intern_init(&t);
		for (int i = 0; i < 100000 && ok; i++) {
			if (i >= 64)
				intern_put(&t, (uint32_t)held[i % 64]);
			snprintf(s, sizeof(s), "value-%d", i);
			held[i % 64] = intern_add(&t, s);
			ok = held[i % 64] >= 0 && intern_find(&t, s) == held[i % 64];
			if (t.n > most_ids)
				most_ids = t.n;
		}
		T_OK("churn: every add found", ok, "%s", "one missing");
		T_INT("churn: held", t.live, 64);
		T_OK("churn: ids reused", most_ids <= 65, "%zu ids", most_ids);
		T_OK("churn: table bounded", t.cap <= 256, "%zu slots", t.cap);
		for (int i = 0; i < 64; i++) {
			snprintf(s, sizeof(s), "value-%d", 100000 - 64 + i);
			ok = ok && intern_find(&t, s) >= 0;
		}
		T_OK("churn: the last 64 found", ok, "%s", "one missing");
		/* removal keeps every other string findable (backward shift) */
		for (int i = 0; i < 64; i += 2)
			intern_put(&t, (uint32_t)held[i]);
		ok = 1;
		for (int i = 0; i < 64; i++) {
			long f = intern_find(&t, intern_str(&t, (uint32_t)held[i]) ? intern_str(&t, (uint32_t)held[i]) : "");

			if (i % 2 && f != held[i])
				ok = 0;
		}
		T_OK("churn: half put back, the rest found", ok && t.live == 32, "%zu held", t.live);
		intern_free(&t);
	}
	return t_done();
}
