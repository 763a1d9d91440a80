/* hooks: executables in source.d, their output as feature files, and every
 * way a hook can misbehave (fail, hang, flood, be no executable at all). */
#include "t.h"

#include "../../core/hooks.h"
#include "../../core/json.h"
#include "../../core/log.h"
#include "../../core/loop.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static void hook(const char *name, const char *body, int mode)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	if (!f || fprintf(f, "#!/bin/sh\n%s\n", body) < 0)
		exit(2);
	fclose(f);
	chmod(p, (mode_t)mode);
}

int main(void)
{
	struct json *l = json_new_object(), *f = json_new_object();
	struct fb_log lg;
	long long t0;
	int n;

	t_suite = "hooks";
	log_init(&lg);
	{
		/* as in the worker, whose loop blocks SIGTERM */
		sigset_t term;

		sigemptyset(&term);
		sigaddset(&term, SIGTERM);
		sigprocmask(SIG_BLOCK, &term, NULL);
	}
	strcpy(dir, "/tmp/fb-hooks-XXXXXX");
	if (!mkdtemp(dir))
		return 2;
	hook("10-good", "echo vendor.io/a=1; echo flag; echo '# +no-label'; echo only-feature=x", 0755);
	hook("20-later", "echo vendor.io/a=2", 0755);
	hook("30-fails", "echo bad=1; echo oops >&2; exit 3", 0755);
	hook("40-hangs", "sleep 30; echo late=1", 0755);
	hook("50-floods", "yes x=1 | head -c 100000", 0755);
	hook("60-not-executable", "echo never=1", 0644);
	hook(".hidden", "echo hidden=1", 0755);
	hook("70-term", "kill -TERM $$; echo afterterm=1", 0755);
	hook("80-closes-pipes", "exec >/dev/null 2>&1; sleep 30", 0755);
	hook("90-background", "echo bg=1; (sleep 30; echo never) & exit 0", 0755);
	t0 = loop_now_ms();
	n = hooks_run_dir(dir, 700, -1, &lg, l, f);
	T_INT("two hooks succeeded", n, 2);
	T_OK("a hook that closes its pipes still gets the timeout", !json_get(l, "never"), "ran");
	T_STR("labels merged, later hook wins", json_get_str(l, "vendor.io/a", "-"), "2");
	T_STR("a bare key is true", json_get_str(l, "flag", "-"), "true");
	T_STR("directives work in hook output", json_get_str(f, "only-feature", "-"), "x");
	T_OK("no-label respected", !json_get(l, "only-feature"), "label present");
	T_OK("a failing hook adds nothing", !json_get(l, "bad"), "bad present");
	T_OK("a hanging hook is killed and adds nothing", !json_get(l, "late"), "late present");
	T_OK("a flooding hook adds nothing", !json_get(l, "x"), "x present");
	T_OK("non-executable and hidden files are not run", !json_get(l, "never") && !json_get(l, "hidden"), "ran");
	T_OK("a hook gets SIGTERM back (not blocked like ours)", !json_get(l, "afterterm"), "survived");
	T_OK("the hangs cost about the timeout each", loop_now_ms() - t0 < 8000, "%lld ms", loop_now_ms() - t0);
	usleep(300000); /* SIGKILL delivery and reaping by init take a moment */
	if (system("pgrep -fa '[s]leep 30' >&2") == 0)
		T_OK("no hook process is left behind", 0, "see stderr");
	else
		T_OK("no hook process is left behind", 1, "-");
	T_INT("a missing directory is no hooks", hooks_run_dir("/nonexistent/source.d", 700, -1, &lg, l, f), 0);
	json_free(l);
	json_free(f);
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			return 2;
	}
	return t_done();
}
