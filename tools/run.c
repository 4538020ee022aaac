/* SPDX-License-Identifier: MIT */
/*
 * `uroce run [--pcap FILE] [--faults SPEC] [--busy-poll] -- PROGRAM [ARGS...]`: run an unmodified
 * rdma-core program over uroce. It puts uroce's libibverbs.so.1 first on LD_LIBRARY_PATH, sets
 * the environment the library reads when it opens a device (UROCE_PCAP, UROCE_FAULTS,
 * UROCE_BUSY_POLL: host/io/wrap_env.h, host/ctx.h) and execs the program in its own place, so the
 * program's exit status, signals and process id are its own.
 *
 * Where the library is: the first directory holding libibverbs.so.1 of
 *   1. $UROCE_LIBDIR, when set (then nothing else is tried: an explicit choice that is wrong must
 *      not silently fall back to another build);
 *   2. next to the running `uroce` (/proc/self/exe): <dir>/lib, the build tree's layout
 *      (<build>/uroce and <build>/lib), then <dir>/UROCE_REL_LIBDIR, the installed layout
 *      (<prefix>/bin/uroce and <prefix>/lib/uroce);
 *   3. the paths compiled in: the build tree's lib/ (UROCE_BUILD_LIBDIR) and the install
 *      directory (UROCE_INSTALL_LIBDIR).
 * The copy next to the binary comes first so that a moved or installed `uroce` uses its own
 * library, not whichever build tree it was compiled in.
 *
 * Sanitizer builds: a library built with ASan/UBSan needs the sanitizer runtime loaded before
 * anything else in a program that was built without it (every Debian binary). When the library
 * found needs libasan/libubsan (its DT_NEEDED) and this `uroce` has them loaded (a sanitizer
 * build too), their paths are prepended to LD_PRELOAD. ASAN_OPTIONS is left alone: leak reports
 * about the program itself (the Debian pingpongs do not free everything) are the caller's to
 * silence with detect_leaks=0.
 *
 * Exit statuses follow env(1) and timeout(1), since after the exec they are the program's: 125
 * for an error of `uroce run` itself (usage, no library, bad --faults, unwritable --pcap), 126
 * when PROGRAM exists but cannot be executed, 127 when it is not found.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "host/config/rundir.h"
#include "host/io/faults.h"
#include "run_view.h"

#ifndef UROCE_BUILD_LIBDIR
#define UROCE_BUILD_LIBDIR ""
#endif
#ifndef UROCE_INSTALL_LIBDIR
#define UROCE_INSTALL_LIBDIR ""
#endif
#ifndef UROCE_REL_LIBDIR
#define UROCE_REL_LIBDIR "../lib/uroce"
#endif

#define RUN_LIB "libibverbs.so.1"

#define USAGE_LINE \
	"usage: uroce run [--pcap FILE] [--faults SPEC] [--busy-poll] [--no-sysfs] -- PROGRAM " \
	"[ARGS...]\n"
#define USAGE_HINT "Run 'uroce help run' for more.\n"

static const char usage_text[] = USAGE_LINE
	"\n"
	"Run PROGRAM, an unmodified rdma-core (libibverbs) program, over uroce: uroce's\n"
	"libibverbs.so.1 goes first on LD_LIBRARY_PATH, and PROGRAM replaces this command\n"
	"(same process id, its own exit status). Its devices are uroce's ('uroce link show').\n"
	"\n"
	"  --pcap FILE     write every frame each opened device sends and receives to FILE, a\n"
	"                  pcap that Wireshark decodes ('uroce pcap-check FILE' verifies every\n"
	"                  ICRC); sets UROCE_PCAP. FILE is created now and rewritten when the\n"
	"                  program opens a device\n"
	"  --faults SPEC   inject faults into what the program sends, SPEC as\n"
	"                  loss=P,dup=P,reorder=P,corrupt=P,seed=N (any subset, P in [0, 1]);\n"
	"                  sets UROCE_FAULTS\n"
	"  --busy-poll     the progress thread never sleeps (lowest latency, one busy CPU);\n"
	"                  sets UROCE_BUSY_POLL=1\n"

	"  --no-sysfs      run PROGRAM in the caller's mount namespace, without the view of\n"
	"                  /sys/class, /dev/infiniband and /sys/kernel/config described below\n"
	"\n"
	"PROGRAM runs in a private mount namespace (inside a user namespace that maps the\n"
	"caller's ids to themselves when the caller is not root) in which\n"
	"/sys/class/infiniband and /sys/class/infiniband_verbs show uroce's devices as the\n"
	"kernel shows an RDMA device's (node_guid, ports/1/state, rate, gids/, gid_attrs/,\n"
	"device/net/IFNAME, uverbsN/ibdev), and /dev/infiniband holds uverbsN and rdma_cm\n"
	"as character devices, for programs that read them (pyverbs' tests, UCX). The\n"
	"files are made when PROGRAM starts: devices and addresses added later\n"
	"are not in them. Where the namespace cannot be made, a note says why and PROGRAM\n"
	"runs without the view.\n"	"\n"
	"UCX_UD_VERBS_ETH_DGID_CHECK=n is set unless already set: UCX before 1.19 reads a\n"
	"UD datagram's IP version from a completion field only Mellanox devices fill, and\n"
	"its ud_verbs transport drops every RoCE v2 IPv4 datagram of other devices.\n"
	"\n"
	"In that namespace /sys/kernel/config/rdma_cm is rdma_cm's configfs for uroce's\n"
	"devices, served (FUSE) while PROGRAM runs: 'mkdir /sys/kernel/config/rdma_cm/DEV'\n"
	"makes DEV/ports/1/default_roce_mode ('RoCE v2' or 'IB/RoCE v1', the mode that\n"
	"'uroce mode' shows and sets, for every process) and default_roce_tos (0..255, the\n"
	"TOS rdma_cm gives an id that sets none); settings outlive 'rmdir'. Where FUSE is\n"
	"unavailable a note says why and PROGRAM runs without it.\n"
	"\n"
	"The '--' is required: everything after it is the program and its arguments.\n"
	"\n"
	"The library is looked for in $UROCE_LIBDIR when set, else next to this command (lib/\n"
	"in a build tree, " UROCE_REL_LIBDIR " when installed), else in the build and\n"
	"install directories this command was compiled for.\n"
	"\n"
	"Exit status: PROGRAM's; 125 an error of uroce run itself (wrong arguments, library\n"
	"not found, bad --faults, --pcap not writable); 126 PROGRAM cannot be executed; 127\n"
	"PROGRAM not found.\n";

enum {
	RUN_EXIT_ERROR = 125,
	RUN_EXIT_CANNOT_EXEC = 126,
	RUN_EXIT_NOT_FOUND = 127,
};

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("uroce: run: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\n" USAGE_LINE USAGE_HINT, stderr);
	return RUN_EXIT_ERROR;
}

static bool has_lib(const char *dir)
{
	char p[PATH_MAX];

	if (!dir[0] || snprintf(p, sizeof(p), "%s/" RUN_LIB, dir) >= (int)sizeof(p))
		return false;
	return access(p, R_OK) == 0;
}

/* Try dir (joined with sub when not NULL): on success its canonical path is in out. */
static bool try_dir(char out[PATH_MAX], const char *dir, const char *sub)
{
	char p[PATH_MAX];

	if (!dir[0])
		return false;
	if (snprintf(p, sizeof(p), "%s%s%s", dir, sub ? "/" : "", sub ? sub : "") >= (int)sizeof(p))
		return false;
	if (!has_lib(p) || !realpath(p, out))
		return false;
	return true;
}

/*
 * Find the library directory (see the top of the file). Returns 0, or -ENOENT after printing
 * where it looked and how to build the library.
 */
static int find_libdir(char out[PATH_MAX])
{
	const char *env = getenv("UROCE_LIBDIR");
	char exe[PATH_MAX];
	const char *tried[2];
	int ntried = 0;
	ssize_t n;

	if (env && env[0]) {
		if (try_dir(out, env, NULL))
			return 0;
		fprintf(stderr,
			"uroce: run: UROCE_LIBDIR=%s holds no " RUN_LIB "; point it at the "
			"lib/ directory of a uroce build, or unset it\n",
			env);
		return -ENOENT;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		char *slash;

		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			if (try_dir(out, exe, "lib") || try_dir(out, exe, UROCE_REL_LIBDIR))
				return 0;
			tried[ntried++] = "lib";
			tried[ntried++] = UROCE_REL_LIBDIR;
		}
	}
	if (try_dir(out, UROCE_BUILD_LIBDIR, NULL) || try_dir(out, UROCE_INSTALL_LIBDIR, NULL))
		return 0;
	fputs("uroce: run: uroce's " RUN_LIB " was not found; looked in:\n", stderr);
	for (int i = 0; i < ntried; i++)
		fprintf(stderr, "  %s/%s\n", exe, tried[i]);
	if (UROCE_BUILD_LIBDIR[0])
		fprintf(stderr, "  %s\n", UROCE_BUILD_LIBDIR);
	if (UROCE_INSTALL_LIBDIR[0])
		fprintf(stderr, "  %s\n", UROCE_INSTALL_LIBDIR);
	fputs("Build it ('cmake --build BUILD --target uroce_verbs'; it needs libibverbs-dev "
	      "for <infiniband/verbs.h>), or set UROCE_LIBDIR to the directory that holds it\n",
	      stderr);
	return -ENOENT;
}

/* setenv NAME to "first:old" (or "first" when NAME is unset or empty). */
static int env_prepend(const char *name, const char *first, char sep)
{
	const char *old = getenv(name);
	char *v;
	int rc;

	if (!old || !old[0])
		return setenv(name, first, 1) ? -errno : 0;
	if (asprintf(&v, "%s%c%s", first, sep, old) < 0)
		return -ENOMEM;
	rc = setenv(name, v, 1) ? -errno : 0;
	free(v);
	return rc;
}

/*
 * Whether the ELF shared object at path lists a sanitizer runtime (libasan.so.N, libubsan.so.N)
 * in its DT_NEEDED entries: read from the section headers (.dynamic and the string table it links
 * to). Anything unreadable or not a 64-bit ELF answers false.
 */
static bool lib_needs_sanitizer(const char *path)
{
	Elf64_Ehdr eh;
	Elf64_Shdr *sh = NULL;
	Elf64_Dyn *dyn = NULL;
	char *str = NULL;
	bool found = false;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 || eh.e_shnum > 4096)
		goto out;
	sh = calloc(eh.e_shnum, sizeof(*sh));
	if (!sh || pread(fd, sh, eh.e_shnum * sizeof(*sh), (off_t)eh.e_shoff) !=
			   (ssize_t)(eh.e_shnum * sizeof(*sh)))
		goto out;
	for (unsigned i = 0; i < eh.e_shnum && !found; i++) {
		const Elf64_Shdr *d = &sh[i], *s;
		size_t nd;

		if (d->sh_type != SHT_DYNAMIC || d->sh_link >= eh.e_shnum)
			continue;
		s = &sh[d->sh_link];
		if (d->sh_size > (1u << 20) || s->sh_size == 0 || s->sh_size > (1u << 24))
			continue;
		nd = d->sh_size / sizeof(Elf64_Dyn);
		dyn = malloc(nd * sizeof(*dyn));
		str = malloc(s->sh_size + 1);
		if (!dyn || !str ||
		    pread(fd, dyn, nd * sizeof(*dyn), (off_t)d->sh_offset) !=
			    (ssize_t)(nd * sizeof(*dyn)) ||
		    pread(fd, str, s->sh_size, (off_t)s->sh_offset) != (ssize_t)s->sh_size)
			goto out;
		str[s->sh_size] = '\0';
		for (size_t k = 0; k < nd && dyn[k].d_tag != DT_NULL; k++) {
			if (dyn[k].d_tag != DT_NEEDED || dyn[k].d_un.d_val >= s->sh_size)
				continue;
			const char *name = str + dyn[k].d_un.d_val;

			if (!strncmp(name, "libasan.so", 10) || !strncmp(name, "libubsan.so", 11))
				found = true;
		}
		free(dyn);
		free(str);
		dyn = NULL;
		str = NULL;
	}
out:
	free(dyn);
	free(str);
	free(sh);
	close(fd);
	return found;
}

/* The sanitizer runtimes loaded in this process (a sanitizer build of uroce), ':'-joined. */
struct san_scan {
	char list[2 * PATH_MAX];
	size_t len;
};

static int san_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct san_scan *s = arg;
	const char *base;

	(void)size;
	if (!info->dlpi_name || !info->dlpi_name[0])
		return 0;
	base = strrchr(info->dlpi_name, '/');
	base = base ? base + 1 : info->dlpi_name;
	if (strncmp(base, "libasan.so", 10) && strncmp(base, "libubsan.so", 11))
		return 0;
	size_t need = strlen(info->dlpi_name) + (s->len ? 1 : 0);

	if (s->len + need < sizeof(s->list)) {
		s->len += (size_t)snprintf(s->list + s->len, sizeof(s->list) - s->len, "%s%s",
					   s->len ? ":" : "", info->dlpi_name);
	}
	return 0;
}

/* Make --pcap FILE absolute (the program may chdir) and check now that it can be written. */
static int pcap_prepare(const char *file, char out[PATH_MAX])
{
	int fd;

	if (file[0] == '/') {
		if (snprintf(out, PATH_MAX, "%s", file) >= PATH_MAX)
			return -ENAMETOOLONG;
	} else {
		char cwd[PATH_MAX];

		if (!getcwd(cwd, sizeof(cwd)))
			return -errno;
		if (snprintf(out, PATH_MAX, "%s/%s", cwd, file) >= PATH_MAX)
			return -ENAMETOOLONG;
	}
	/* Create it without truncating: the library rewrites it when a device is opened. */
	fd = open(out, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* The sysfs view and rdma_cm's configfs (run_view.h), or a note saying why there is none. */
static void enter_view(void)
{
	char rundir[PATH_MAX], why[256] = "";
	int rc = uroce_rundir_path(rundir, sizeof(rundir));

	if (rc)
		snprintf(why, sizeof(why), "no run-time directory: %s", strerror(-rc));
	else
		rc = uroce_run_view_enter(rundir, why, sizeof(why));
	if (rc) {
		fprintf(stderr,
			"uroce: run: note: no /sys/class/infiniband view of uroce's devices (%s); "
			"--no-sysfs skips it\n",
			why);
		return;
	}
	rc = uroce_run_view_configfs(rundir, why, sizeof(why));
	if (rc)
		fprintf(stderr, "uroce: run: note: no /sys/kernel/config/rdma_cm (%s)\n", why);
}

int uroce_cmd_run(int argc, char **argv)
{
	const char *pcap = NULL, *faults = NULL;
	bool busy_poll = false, sysfs = true;
	char libdir[PATH_MAX], pcap_path[PATH_MAX];
	int i, rc;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--"))
			break;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage_text, stdout);
			return UROCE_EXIT_OK;
		}
		if (!strcmp(a, "--busy-poll")) {
			busy_poll = true;
		} else if (!strcmp(a, "--no-sysfs")) {
			sysfs = false;
		} else if (!strcmp(a, "--pcap") || !strcmp(a, "--faults")) {
			if (i + 1 >= argc || !strcmp(argv[i + 1], "--"))
				return usage_error("'%s' needs a value", a);
			if (!strcmp(a, "--pcap"))
				pcap = argv[++i];
			else
				faults = argv[++i];
		} else if (!strncmp(a, "--pcap=", 7)) {
			pcap = a + 7;
		} else if (!strncmp(a, "--faults=", 9)) {
			faults = a + 9;
		} else if (a[0] == '-') {
			return usage_error("unknown option '%s'", a);
		} else {
			return usage_error(
				"put '--' before the program: uroce run [OPTIONS] -- %s ...", a);
		}
	}
	if (i >= argc)
		return usage_error("%s", "missing '--' and the program to run");
	if (i + 1 >= argc)
		return usage_error("%s", "missing the program after '--'");
	char **prog = argv + i + 1;

	if (pcap && !pcap[0])
		return usage_error("%s", "--pcap needs a file name");
	if (faults) {
		struct uroce_faults f;
		char err[256] = "";

		if (uroce_faults_parse(&f, faults, err, sizeof(err)) < 0) {
			fprintf(stderr, "uroce: run: --faults '%s': %s\n", faults,
				err[0] ? err : "invalid");
			return RUN_EXIT_ERROR;
		}
	}
	if (find_libdir(libdir))
		return RUN_EXIT_ERROR;
	if (pcap) {
		rc = pcap_prepare(pcap, pcap_path);
		if (rc) {
			fprintf(stderr, "uroce: run: --pcap %s: cannot write it: %s\n", pcap,
				strerror(-rc));
			return RUN_EXIT_ERROR;
		}
	}

	struct san_scan san = {.len = 0};
	char lib[PATH_MAX + sizeof(RUN_LIB) + 1];

	snprintf(lib, sizeof(lib), "%s/" RUN_LIB, libdir);
	if (lib_needs_sanitizer(lib))
		dl_iterate_phdr(san_one, &san);
	rc = env_prepend("LD_LIBRARY_PATH", libdir, ':');
	if (!rc && san.len)
		rc = env_prepend("LD_PRELOAD", san.list, ':');
	if (!rc && pcap)
		rc = setenv("UROCE_PCAP", pcap_path, 1) ? -errno : 0;
	if (!rc && faults)
		rc = setenv("UROCE_FAULTS", faults, 1) ? -errno : 0;
	if (!rc && busy_poll)
		rc = setenv("UROCE_BUSY_POLL", "1", 1) ? -errno : 0;
	/* UCX before 1.19 takes a UD datagram's destination GID length from the completion's SL, a
	 * field only Mellanox hardware fills with the packet's IP version; on any other device its
	 * ud_verbs transport drops every RoCE v2 IPv4 datagram unless this check is off. */
	if (!rc)
		rc = setenv("UCX_UD_VERBS_ETH_DGID_CHECK", "n", 0) ? -errno : 0;
	if (rc) {
		fprintf(stderr, "uroce: run: cannot set the environment: %s\n", strerror(-rc));
		return RUN_EXIT_ERROR;
	}
	if (sysfs)
		enter_view();
	fflush(stdout);
	execvp(prog[0], prog);
	rc = errno;
	if (rc == ENOENT) {
		fprintf(stderr, "uroce: run: %s: command not found%s\n", prog[0],
			strchr(prog[0], '/') ? "" : " (not in PATH)");
		return RUN_EXIT_NOT_FOUND;
	}
	fprintf(stderr, "uroce: run: %s: cannot execute: %s\n", prog[0], strerror(rc));
	return RUN_EXIT_CANNOT_EXEC;
}
