// SPDX-License-Identifier: GPL-2.0
/*
 * Options for PERF_SAMPLE_TLS_USER: bytes of a thread's thread-local data
 * in every sample.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/err.h>
#include <linux/kernel.h>
#include <linux/perf_event.h>
#include <linux/zalloc.h>
#include <subcmd/parse-options.h>
#include "debug.h"
#include "hashmap.h"
#include "otel-process-ctx.h"
#include "sample.h"
#include "target.h"
#include "tls-layout.h"
#include "tls-user.h"

static int tls_user__parse_num(const char *str, long long min, long long max,
			       long long *val)
{
	char *end;

	if (!*str)
		return -EINVAL;
	errno = 0;
	*val = strtoll(str, &end, 0);
	if (errno || *end || *val < min || *val > max)
		return -EINVAL;
	return 0;
}

/* len=OFF:SIZE[:BASE[:SHIFT]], checked against the dump size later */
static int tls_user__parse_len(struct tls_user_opts *tls, char *spec)
{
	char *fields[4] = { NULL }, *saveptr = NULL, *f;
	long long val[4] = { 0, 0, 0, 0 };
	static const long long max[4] = {
		USHRT_MAX, 8, USHRT_MAX, PERF_TLS_USER_MAX_LEN_SHIFT,
	};
	int i, n = 0;

	for (f = strtok_r(spec, ":", &saveptr); f; f = strtok_r(NULL, ":", &saveptr)) {
		if (n == 4)
			goto out_bad;
		fields[n++] = f;
	}
	if (n < 2)
		goto out_bad;
	for (i = 0; i < n; i++) {
		if (tls_user__parse_num(fields[i], 0, max[i], &val[i]))
			goto out_bad;
	}
	if (val[1] != 1 && val[1] != 2 && val[1] != 4 && val[1] != 8)
		goto out_bad;
	tls->len_offset = val[0];
	tls->len_size = val[1];
	tls->len_base = val[2];
	tls->len_shift = val[3];
	return 0;

out_bad:
	pr_err("--tls-user: len=OFF:SIZE[:BASE[:SHIFT]]: SIZE is 1, 2, 4 or 8, SHIFT at most %d\n",
	       PERF_TLS_USER_MAX_LEN_SHIFT);
	return -EINVAL;
}

static int tls_user__parse_term(struct tls_user_opts *tls, char *term,
				bool *has_offset)
{
	long long val;

	if (!strncmp(term, "sym=", 4)) {
		if (!term[4] || strlen(term + 4) >= sizeof(tls->sym)) {
			pr_err("--tls-user: bad symbol name '%s'\n", term + 4);
			return -EINVAL;
		}
		snprintf(tls->sym, sizeof(tls->sym), "%s", term + 4);
	} else if (!strncmp(term, "offset=", 7)) {
		if (tls_user__parse_num(term + 7, INT_MIN, INT_MAX, &val)) {
			pr_err("--tls-user: bad offset '%s'\n", term + 7);
			return -EINVAL;
		}
		tls->offset = val;
		*has_offset = true;
	} else if (!strcmp(term, "deref")) {
		tls->flags |= PERF_TLS_USER_DEREF;
	} else if (!strncmp(term, "deref=", 6)) {
		if (tls_user__parse_num(term + 6, 0, USHRT_MAX, &val)) {
			pr_err("--tls-user: bad deref offset '%s'\n", term + 6);
			return -EINVAL;
		}
		tls->flags |= PERF_TLS_USER_DEREF;
		tls->deref_offset = val;
	} else if (!strncmp(term, "hop=", 4)) {
		if (tls->hops == PERF_TLS_USER_MAX_HOPS) {
			pr_err("--tls-user: at most %d hop=\n", PERF_TLS_USER_MAX_HOPS);
			return -EINVAL;
		}
		if (tls_user__parse_num(term + 4, INT_MIN, INT_MAX, &val)) {
			pr_err("--tls-user: bad hop offset '%s'\n", term + 4);
			return -EINVAL;
		}
		tls->hop_offset[tls->hops++] = val;
	} else if (!strncmp(term, "len=", 4)) {
		if (tls->len_size) {
			pr_err("--tls-user: one len= only\n");
			return -EINVAL;
		}
		return tls_user__parse_len(tls, term + 4);
	} else if (!strcmp(term, "registered")) {
		tls->flags |= PERF_TLS_USER_REGISTERED;
	} else if (!strcmp(term, "defer")) {
		tls->flags |= PERF_TLS_USER_DEFER;
	} else {
		pr_err("--tls-user: unknown term '%s'\n", term);
		return -EINVAL;
	}
	return 0;
}

/* The read program as a whole, once all the terms are known */
static int tls_user__check(const struct tls_user_opts *tls)
{
	if (tls->hops && (tls->flags & PERF_TLS_USER_DEREF)) {
		pr_err("--tls-user: deref is the one-hop program: give hop= or deref, not both\n");
		return -EINVAL;
	}
	if ((tls->flags & PERF_TLS_USER_REGISTERED) && tls->sym[0]) {
		pr_err("--tls-user: registered starts at the address each thread registered,\n"
		       "  sym=NAME at the thread pointer: give one of them\n");
		return -EINVAL;
	}
	if (tls->len_size &&
	    (tls->len_offset + tls->len_size > tls->size || tls->len_base > tls->size)) {
		pr_err("--tls-user: the length field (len=%u:%u) and its base %u must lie\n"
		       "  within the %u bytes copied\n",
		       tls->len_offset, tls->len_size, tls->len_base, tls->size);
		return -EINVAL;
	}
	return 0;
}

/* otel's length field: attrs_data_size, the attributes after the record */
static void tls_user__otel_len(struct tls_user_opts *tls)
{
	tls->len_offset = OTEL_ATTRS_SIZE_OFFSET;
	tls->len_size = sizeof(u16);
	tls->len_base = OTEL_ATTRS_OFFSET;
	tls->len_shift = 0;
	tls->len_optional = true;
}

/*
 * --tls-user=SIZE[,offset=N|sym=NAME][,deref[=M]|,hop=M...][,len=L:S[:B[:SH]]]
 *            [,registered][,defer]
 * --tls-user=otel[,offset=N][,size=N][,registered][,defer]
 * --tls-user=registered[,size=N][,defer]: otel,registered
 */
int tls_user__parse_opt(const struct option *opt, const char *str, int unset)
{
	struct tls_user_opts *tls = opt->value;
	bool has_offset = false, otel = false;
	char *buf, *term, *saveptr = NULL;
	long long val;
	int ret = -EINVAL;

	memset(tls, 0, sizeof(*tls));
	if (unset)
		return 0;

	buf = strdup(str);
	if (!buf)
		return -ENOMEM;

	term = strtok_r(buf, ",", &saveptr);
	if (!term)
		goto out_usage;

	if (!strcmp(term, "otel") || !strcmp(term, "registered")) {
		otel = true;
		tls->size = OTEL_TLS_SIZE;
		tls->flags = PERF_TLS_USER_DEREF;
		if (!strcmp(term, "registered"))
			tls->flags |= PERF_TLS_USER_REGISTERED;
	} else if (tls_user__parse_num(term, 8, PERF_TLS_USER_MAX_SIZE, &val) ||
		   val % 8) {
		pr_err("--tls-user: size must be a multiple of 8 from 8 to %d\n",
		       PERF_TLS_USER_MAX_SIZE);
		goto out_usage;
	} else {
		tls->size = val;
	}

	while ((term = strtok_r(NULL, ",", &saveptr)) != NULL) {
		if (otel && !strncmp(term, "size=", 5)) {
			if (tls_user__parse_num(term + 5, OTEL_TLS_SIZE,
						PERF_TLS_USER_MAX_SIZE, &val) || val % 8) {
				pr_err("--tls-user=otel: size must be a multiple of 8 from %d to %d\n",
				       OTEL_TLS_SIZE, PERF_TLS_USER_MAX_SIZE);
				goto out_usage;
			}
			tls->size = val;
			continue;
		}
		if (otel && strncmp(term, "offset=", 7) && strcmp(term, "defer") &&
		    strcmp(term, "registered")) {
			pr_err("--tls-user=otel and registered take only offset=N, size=N, registered and defer\n");
			goto out_usage;
		}
		if (tls_user__parse_term(tls, term, &has_offset))
			goto out_usage;
	}

	if (has_offset && tls->sym[0]) {
		pr_err("--tls-user: give offset=N or sym=NAME, not both\n");
		goto out_usage;
	}
	if (otel) {
		tls_user__otel_len(tls);
		/*
		 * Registered: the thread registered the address of its
		 * otel_thread_ctx_v1, which holds the record's address: no
		 * symbol to look up, whatever the binaries of the processes.
		 */
		if (!(tls->flags & PERF_TLS_USER_REGISTERED))
			snprintf(tls->sym, sizeof(tls->sym), "%s", OTEL_TLS_SYMBOL);
	}
	if (tls_user__check(tls))
		goto out_usage;
	/* Computed once the workload or the target processes are known */
	tls->find = tls->sym[0] && !has_offset;
	ret = 0;
	goto out;

out_usage:
	memset(tls, 0, sizeof(*tls));
out:
	free(buf);
	return ret;
}

/* How to find N when perf cannot */
static void tls_user__hint(const char *sym)
{
	pr_err("  Give offset=N: N is the address of %s minus the thread pointer, the same\n"
	       "  in every thread. The program can print it as\n"
	       "  (char *)&%s - (char *)__builtin_thread_pointer(); for a running\n"
	       "  process, 'perf record -p PID' computes it, or gdb -p PID prints it with\n"
	       "  'print (long)&%s - (long)$fs_base' (x86_64, $tpidr on arm64).\n",
	       sym, sym, sym);
}

static void tls_user__explain(const struct tls_layout_result *res, const char *sym,
			      pid_t pid)
{
	switch (res->err) {
	case TLS_LAYOUT_OK:
	case TLS_LAYOUT_NOMEM:
		break;
	case TLS_LAYOUT_NO_PROG:
		if (pid)
			pr_err("--tls-user: cannot read /proc/%d/exe: no such process, or no permission\n",
			       pid);
		else
			pr_err("--tls-user: no such program '%s'\n", res->where);
		return;
	case TLS_LAYOUT_SCRIPT:
		pr_err("--tls-user: %s is a script: perf looks for %s in the ELF files of a\n"
		       "  program; run perf record -- on the program the script starts.\n",
		       res->where, sym);
		break;
	case TLS_LAYOUT_NOT_ELF:
		pr_err("--tls-user: %s is not an ELF file perf can read\n", res->where);
		break;
	case TLS_LAYOUT_ARCH:
		pr_err("--tls-user: %s is not a 64-bit x86_64 or aarch64 program of this byte order\n",
		       res->where);
		break;
	case TLS_LAYOUT_NO_SYM:
		pr_err("--tls-user: no TLS symbol %s is defined in %s or the %d libraries it loads\n"
		       "  at startup (LD_PRELOAD, DT_NEEDED)\n", sym, res->where, res->nr_objs - 1);
		if (res->nr_missing)
			pr_err("  perf did not find %d of those libraries, the first is %s\n",
			       res->nr_missing, res->missing);
		break;
	case TLS_LAYOUT_DLOPEN:
		pr_err("--tls-user: %s is defined in %s, which process %d loaded with dlopen():\n"
		       "  it is in dynamic TLS, out of reach of a single dereference from the\n"
		       "  thread pointer; perf cannot compute an offset for it (the loader may\n"
		       "  still have placed it in static TLS: find it as below).\n",
		       sym, res->where, pid);
		break;
	case TLS_LAYOUT_BAD_TLS:
		pr_err("--tls-user: the PT_TLS segment of %s, loaded before or with the\n"
		       "  definition of %s, is one perf cannot place or does not hold it\n",
		       res->where, sym);
		break;
	default:
		break;
	}
	tls_user__hint(sym);
}

/* A command line perf looks through to the program it runs */
struct tls_user_cmd {
	struct tls_layout_env	env;
	char			*words;		/* sh -c STRING split in words */
	const char		*argv[64];
};

/* NAME=VALUE, as a shell or env takes it */
static bool tls_user__is_assign(const char *s)
{
	const char *c;

	if (!isalpha(*s) && *s != '_')
		return false;
	for (c = s; isalnum(*c) || *c == '_'; c++)
		;
	return *c == '=';
}

static void tls_user__assign(struct tls_layout_env *env, const char *s)
{
	if (!strncmp(s, "LD_LIBRARY_PATH=", 16))
		env->ld_library_path = s + 16;
	else if (!strncmp(s, "LD_PRELOAD=", 11))
		env->ld_preload = s + 11;
}

/* The index of the first word after the options of env, timeout or nice */
static int tls_user__skip_opts(const char *wrapper, int argc, const char **argv,
			       struct tls_layout_env *env)
{
	int i = 1;

	for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		const char *o = argv[i];

		if (!strcmp(o, "--"))
			return i + 1;
		if (!strcmp(wrapper, "env")) {
			if (!strcmp(o, "-i") || !strcmp(o, "--ignore-environment")) {
				env->ld_library_path = NULL;
				env->ld_preload = NULL;
			} else if (!strcmp(o, "-u") || !strcmp(o, "-C")) {
				if (i + 1 < argc && !strcmp(argv[i + 1], "LD_LIBRARY_PATH"))
					env->ld_library_path = NULL;
				if (i + 1 < argc && !strcmp(argv[i + 1], "LD_PRELOAD"))
					env->ld_preload = NULL;
				i++;
			} else if (strcmp(o, "-0") && strcmp(o, "-v") &&
				   strncmp(o, "--unset=", 8) && strncmp(o, "--chdir=", 8)) {
				return -1;	/* -S and the like */
			}
		} else if (!strcmp(wrapper, "timeout")) {
			if (!strcmp(o, "-s") || !strcmp(o, "-k"))
				i++;
			else if (strncmp(o, "--signal=", 9) && strncmp(o, "--kill-after=", 13) &&
				 strcmp(o, "--preserve-status") && strcmp(o, "--foreground") &&
				 strcmp(o, "-v") && strcmp(o, "--verbose") &&
				 strncmp(o, "-s", 2) && strncmp(o, "-k", 2))
				return -1;
		} else if (!strcmp(wrapper, "nice")) {
			if (!strcmp(o, "-n"))
				i++;
			else if (strncmp(o, "--adjustment=", 13) && strncmp(o, "-n", 2) &&
				 !(o[1] >= '0' && o[1] <= '9'))
				return -1;
		} else {
			return -1;
		}
	}
	return i;
}

static bool tls_user__is_builtin(const char *word)
{
	static const char * const builtins[] = {
		"cd", "export", "set", ".", "source", "eval", "trap", "ulimit", "umask",
		"if", "for", "while", "until", "case", "command", "builtin", "read",
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(builtins); i++) {
		if (!strcmp(word, builtins[i]))
			return true;
	}
	return false;
}

/* Split sh -c STRING in words, when it starts with a plain command */
static int tls_user__sh_words(struct tls_user_cmd *cmd, const char *str,
			      int *argc, const char ***argv)
{
	char *s, *saveptr = NULL;
	int n = 0;

	free(cmd->words);
	cmd->words = strdup(str);
	if (!cmd->words)
		return -ENOMEM;
	for (s = strtok_r(cmd->words, " \t\n", &saveptr); s && n < (int)ARRAY_SIZE(cmd->argv);
	     s = strtok_r(NULL, " \t\n", &saveptr)) {
		if (n == 0 && !strcmp(s, "exec"))
			continue;
		cmd->argv[n++] = s;
		/* Up to the command word, nothing the shell would expand */
		if (strpbrk(s, ";|&<>()`$\\'\"*?[]{}~!#"))
			return -1;
		if (!tls_user__is_assign(s))
			break;
	}
	/* A shell keyword or builtin runs no program of that name */
	if (n && tls_user__is_builtin(cmd->argv[n - 1]))
		return -1;
	*argc = n;
	*argv = cmd->argv;
	return n ? 0 : -1;
}

/*
 * The program a workload command line runs: through env [VAR=x], timeout,
 * nice, nohup and sh -c 'prog ...'.  NULL with a message for a wrapper
 * perf does not look through.
 */
static const char *tls_user__unwrap(struct tls_user_cmd *cmd, int argc, const char **argv)
{
	static const char * const opaque[] = {
		"taskset", "chrt", "ionice", "stdbuf", "setarch", "numactl", "sudo",
		"doas", "su", "runuser", "strace", "ltrace", "valgrind", "xargs", "time",
		"watch", "setsid", "unshare", "nsenter", "chroot", "flock", "busybox",
		"systemd-run", "cgexec", "ssh", "python", "python3",
	};
	const char *base;
	unsigned int depth, i;
	int skip;

	cmd->env.ld_library_path = getenv("LD_LIBRARY_PATH");
	cmd->env.ld_preload = getenv("LD_PRELOAD");

	for (depth = 0; depth < 8 && argc > 0; depth++) {
		base = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];

		if (!strcmp(base, "env") || !strcmp(base, "timeout") || !strcmp(base, "nice") ||
		    !strcmp(base, "nohup")) {
			skip = tls_user__skip_opts(base, argc, argv, &cmd->env);
			if (skip < 0)
				goto out_opaque;
			if (!strcmp(base, "timeout"))
				skip++;		/* the duration */
			while (!strcmp(base, "env") && skip < argc &&
			       tls_user__is_assign(argv[skip]))
				tls_user__assign(&cmd->env, argv[skip++]);
			argc -= skip;
			argv += skip;
			continue;
		}
		if (!strcmp(base, "sh") || !strcmp(base, "bash") || !strcmp(base, "dash") ||
		    !strcmp(base, "ash") || !strcmp(base, "zsh") || !strcmp(base, "ksh")) {
			if (argc < 3 || strcmp(argv[1], "-c") ||
			    tls_user__sh_words(cmd, argv[2], &argc, &argv))
				goto out_opaque;
			for (; argc > 1 && tls_user__is_assign(argv[0]); argc--, argv++)
				tls_user__assign(&cmd->env, argv[0]);
			continue;
		}
		for (i = 0; i < ARRAY_SIZE(opaque); i++) {
			if (!strcmp(base, opaque[i]))
				goto out_opaque;
		}
		return argv[0];
	}
	if (argc > 0)
		return argv[0];
	pr_err("--tls-user: perf cannot tell which program the workload runs\n");
	return NULL;

out_opaque:
	pr_err("--tls-user: the workload starts with '%s', which runs another program that\n"
	       "  perf does not look into for the TLS symbol: run perf record -- PROGRAM with\n"
	       "  the program itself (perf looks through env, timeout, nice, nohup and\n"
	       "  sh -c 'PROGRAM ...'), or give offset=N.\n", argv[0]);
	return NULL;
}

/* The program execvp() would run for @prog, NULL when there is none */
static char *tls_user__which(const char *prog)
{
	const char *path = getenv("PATH");
	char *dirs, *dir, *saveptr = NULL, *file = NULL;

	if (strchr(prog, '/'))
		return access(prog, F_OK) ? NULL : strdup(prog);
	if (!path)
		path = "/bin:/usr/bin";

	dirs = strdup(path);
	if (!dirs)
		return NULL;
	for (dir = strtok_r(dirs, ":", &saveptr); dir;
	     dir = strtok_r(NULL, ":", &saveptr)) {
		if (asprintf(&file, "%s/%s", *dir ? dir : ".", prog) < 0) {
			file = NULL;
			break;
		}
		if (!access(file, X_OK))
			break;
		zfree(&file);
	}
	free(dirs);
	return file;
}

static int tls_user__set(struct tls_user_opts *tls, s64 offset, const char *where)
{
	if (offset < INT_MIN || offset > INT_MAX) {
		pr_err("--tls-user: %s is at %lld from the thread pointer in %s, out of range\n",
		       tls->sym, (long long)offset, where);
		return -ERANGE;
	}
	pr_debug("--tls-user: %s is at thread pointer %+lld (%s)\n",
		 tls->sym, (long long)offset, where);
	tls->offset = offset;
	tls->find = false;
	return 0;
}

void tls_user__comm(pid_t pid, char *comm, size_t size)
{
	char file[64];
	FILE *fp;

	snprintf(file, sizeof(file), "/proc/%d/comm", pid);
	comm[0] = '\0';
	fp = fopen(file, "re");
	if (fp) {
		if (fgets(comm, size, fp))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(fp);
	}
}

#define TLS_USER_MAX_SEEN	4096

struct tls_user_seen {
	pid_t	pid;
	s64	offset;
	bool	dlopen;
};

/*
 * System wide: one offset applies to every process (the kernel takes one per
 * event).  Look at the processes perf can see that map an object defining
 * the symbol; without a workload, take the offset most of them have.  Warn
 * about the others.
 */
static int tls_user__system_wide(struct tls_user_opts *tls, bool have_offset,
				 const char *from, bool warn)
{
	struct tls_user_seen *seen = calloc(TLS_USER_MAX_SEEN, sizeof(*seen));
	struct tls_layout_result *res = malloc(sizeof(*res));
	int i, j, nr = 0, best = -1, best_count = 0, nr_other = 0, ret = 0;
	char comm[32];
	struct dirent *d;
	DIR *dir;

	if (!seen || !res) {
		ret = -ENOMEM;
		goto out;
	}
	dir = opendir("/proc");
	if (!dir) {
		ret = -errno;
		goto out;
	}
	while ((d = readdir(dir)) != NULL && nr < TLS_USER_MAX_SEEN) {
		char *end;
		long pid = strtol(d->d_name, &end, 10);

		if (*end || pid <= 0 || pid == getpid() ||
		    !tls_layout__pid_maps_sym(pid, tls->sym))
			continue;
		tls_layout__of_pid(pid, tls->sym, res);
		if ((res->err != TLS_LAYOUT_OK && res->err != TLS_LAYOUT_DLOPEN) ||
		    (kill(pid, 0) < 0 && errno == ESRCH))
			continue;
		seen[nr].pid = pid;
		seen[nr].offset = res->offset;
		seen[nr].dlopen = res->err == TLS_LAYOUT_DLOPEN;
		nr++;
	}
	closedir(dir);

	if (!have_offset) {
		for (i = 0; i < nr; i++) {
			int count = 0;

			for (j = 0; j < nr && !seen[i].dlopen; j++)
				count += !seen[j].dlopen && seen[j].offset == seen[i].offset;
			if (count > best_count) {
				best = i;
				best_count = count;
			}
		}
		if (best < 0) {
			pr_err("--tls-user: no process perf can see has %s in static TLS: start the\n"
			       "  program before perf record -a, or record it with -p PID or as the\n"
			       "  workload.\n", tls->sym);
			tls_user__hint(tls->sym);
			ret = -ENOENT;
			goto out;
		}
		tls_user__comm(seen[best].pid, comm, sizeof(comm));
		if (best_count > 1)
			snprintf(res->where, sizeof(res->where),
				 "pid %d (%s) and %d more processes",
				 seen[best].pid, comm, best_count - 1);
		else
			snprintf(res->where, sizeof(res->where), "pid %d (%s)",
				 seen[best].pid, comm);
		ret = tls_user__set(tls, seen[best].offset, res->where);
		if (ret)
			goto out;
		from = res->where;
	}

	/* Each process gets its own program, unless the kernel cannot */
	pr_debug("--tls-user: %s at thread pointer %+d, from %s\n",
		 tls->sym, tls->offset, from);
	if (!warn)
		goto out;
	pr_warning("--tls-user: system wide, one offset applies to every process (the kernel\n"
		   "  takes one per event): %s at thread pointer %+d, from %s.\n",
		   tls->sym, tls->offset, from);
	for (i = 0; i < nr; i++) {
		if (!seen[i].dlopen && seen[i].offset == tls->offset)
			continue;
		if (nr_other++ >= 16)
			continue;
		tls_user__comm(seen[i].pid, comm, sizeof(comm));
		if (seen[i].dlopen)
			pr_warning("  pid %d (%s) has %s in dynamic TLS (dlopen()ed), out of reach\n",
				   seen[i].pid, comm, tls->sym);
		else
			pr_warning("  pid %d (%s) has %s at %+lld: its samples read the wrong place\n",
				   seen[i].pid, comm, tls->sym, (long long)seen[i].offset);
	}
	if (nr_other > 16)
		pr_warning("  and %d more processes with other offsets\n", nr_other - 16);
	if (nr_other)
		pr_warning("  Record those with -p PID, or as the workload.\n");
out:
	free(res);
	free(seen);
	return ret;
}

/* -p/-t: the offset in each process, which must agree */
static int tls_user__find_pids(struct tls_user_opts *tls, const char *list)
{
	struct tls_layout_result *res = malloc(sizeof(*res));
	char *buf = strdup(list), *tok, *saveptr = NULL, comm[32];
	bool found = false;
	int ret = 0;

	if (!res || !buf) {
		ret = -ENOMEM;
		goto out;
	}
	for (tok = strtok_r(buf, ",", &saveptr); tok && !ret;
	     tok = strtok_r(NULL, ",", &saveptr)) {
		char *end;
		long pid = strtol(tok, &end, 10);

		if (*end || pid <= 0 || pid > INT_MAX)
			continue;
		tls_layout__of_pid(pid, tls->sym, res);
		if (res->err != TLS_LAYOUT_OK) {
			tls_user__explain(res, tls->sym, pid);
			ret = -EINVAL;
		} else if (!found) {
			snprintf(res->where + strlen(res->where),
				 sizeof(res->where) - strlen(res->where), ", pid %ld", pid);
			ret = tls_user__set(tls, res->offset, res->where);
			found = true;
		} else if (res->offset != tls->offset) {
			/* Each process gets its own program (tls-host.c) */
			tls_user__comm(pid, comm, sizeof(comm));
			pr_debug("--tls-user: pid %ld (%s) has %s at %+lld\n",
				 pid, comm, tls->sym, (long long)res->offset);
		}
	}
	if (!ret && !found) {
		pr_err("--tls-user: no process id in '%s'\n", list);
		ret = -EINVAL;
	}
out:
	free(buf);
	free(res);
	return ret;
}

/*
 * --tls-user without offset=N: compute the offset of the TLS symbol from the
 * thread pointer, in the processes of -p/-t, in the workload, or system wide
 * in the processes perf can see.
 */
int tls_user__find_offset(struct tls_user_opts *tls, int argc, const char **argv,
			  const struct target *target)
{
	struct tls_layout_result *res;
	struct tls_user_cmd cmd = { .words = NULL };
	const char *prog;
	char *path = NULL;
	int ret = -EINVAL;

	if (target->pid || target->tid)
		return tls_user__find_pids(tls, target->pid ? target->pid : target->tid);
	if (!argc) {
		if (target->system_wide || target->cpu_list)
			return tls_user__system_wide(tls, false, NULL, false);
		pr_err("--tls-user: give offset=N, a workload, -p PID or -a to find %s\n",
		       tls->sym);
		return -EINVAL;
	}

	res = malloc(sizeof(*res));
	if (!res)
		return -ENOMEM;
	prog = tls_user__unwrap(&cmd, argc, argv);
	if (!prog)
		goto out;
	path = tls_user__which(prog);
	if (!path) {
		pr_err("--tls-user: no such program '%s'\n", prog);
		goto out;
	}
	tls_layout__of_prog(path, &cmd.env, tls->sym, res);
	/* perf record -a -- sleep N: the workload only sets the duration */
	if (res->err == TLS_LAYOUT_NO_SYM && (target->system_wide || target->cpu_list)) {
		pr_debug("--tls-user: %s does not define %s, looking at the processes\n",
			 res->where, tls->sym);
		ret = tls_user__system_wide(tls, false, NULL, false);
		goto out;
	}
	if (res->err != TLS_LAYOUT_OK) {
		tls_user__explain(res, tls->sym, 0);
		goto out;
	}
	ret = tls_user__set(tls, res->offset, res->where);
	if (!ret && (target->system_wide || target->cpu_list))
		ret = tls_user__system_wide(tls, true, res->where, false);
out:
	free(cmd.words);
	free(path);
	free(res);
	return ret;
}

/*
 * -a or -C with offset=N: the one offset applies to every process; with a
 * symbol (otel), check it against the processes perf can see.
 */
int tls_user__system_wide_offset(struct tls_user_opts *tls)
{
	/* Each thread says where its context is */
	if (tls->flags & PERF_TLS_USER_REGISTERED)
		return 0;
	if (tls->sym[0])
		return tls_user__system_wide(tls, true, "offset=N", false);
	pr_warning("--tls-user: system wide, one offset applies to every process (the kernel\n"
		   "  takes one per event): thread pointer %+d.\n", tls->offset);
	return 0;
}

/*
 * The kernel takes no program per process (PERF_EVENT_IOC_TLS_USER_PROC):
 * the events' one offset applies to every process; name those that have
 * the symbol elsewhere.
 */
void tls_user__one_offset_warning(struct tls_user_opts *tls)
{
	tls_user__system_wide(tls, true, "the processes perf saw", true);
}

/*
 * An OpenTelemetry thread context record, read through the pointer, with
 * the trace and span ids, and the valid byte set by the writer.
 */
bool tls_user__is_otel(const struct tls_dump *tls, u16 flags)
{
	return (flags & PERF_TLS_USER_DEREF) &&
	       tls->dyn_size >= OTEL_RECORD_MIN_SIZE &&
	       tls_dump__byte(tls, OTEL_VALID_OFFSET) == 1;
}

size_t tls_user__fprintf_ids(const u8 *trace_id, const u8 *span_id, FILE *fp)
{
	size_t printed = fprintf(fp, "trace_id=");
	int i;

	for (i = 0; i < OTEL_TRACE_ID_SIZE; i++)
		printed += fprintf(fp, "%02x", trace_id[i]);
	printed += fprintf(fp, " span_id=");
	for (i = 0; i < OTEL_SPAN_ID_SIZE; i++)
		printed += fprintf(fp, "%02x", span_id[i]);
	return printed;
}

void tls_user__otel_ids(const struct tls_dump *tls, u16 flags, struct otel_ids *ids)
{
	memset(ids, 0, sizeof(*ids));
	if (!tls->data || !tls_user__is_otel(tls, flags))
		return;
	tls_dump__read(tls, 0, ids->trace_id, OTEL_TRACE_ID_SIZE);
	tls_dump__read(tls, OTEL_TRACE_ID_SIZE, ids->span_id, OTEL_SPAN_ID_SIZE);
	ids->valid = true;
}

/*
 * The attributes of the record, as far as the dump covers them: each entry
 * is a key index, a length and that many bytes of UTF-8 value; the last
 * entry of a key wins; decoding stops at an entry that does not fit in
 * attrs_data_size or in the dump.  attrs_data_size is native endian to the
 * recording machine: the other byte order when the file was swapped.
 */
void tls_user__otel_attrs(const struct tls_dump *tls, u16 flags, struct otel_attrs *attrs)
{
	static const bool host_le = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
	u64 lo, hi, end, pos = OTEL_ATTRS_OFFSET;

	memset(attrs, 0, sizeof(*attrs));
	if (!tls->data || !tls_user__is_otel(tls, flags))
		return;
	lo = tls_dump__byte(tls, OTEL_ATTRS_SIZE_OFFSET);
	hi = tls_dump__byte(tls, OTEL_ATTRS_SIZE_OFFSET + 1);
	/* The recording machine was little endian: this one is, unswapped */
	if (host_le != tls->swapped)
		attrs->size = lo | hi << 8;
	else
		attrs->size = hi | lo << 8;
	end = min(OTEL_ATTRS_OFFSET + attrs->size, tls->dyn_size);
	attrs->in_dump = end - OTEL_ATTRS_OFFSET;

	while (pos + 2 <= end) {
		u8 k = tls_dump__byte(tls, pos), n = tls_dump__byte(tls, pos + 1);

		if (n > end - pos - 2)
			break;
		attrs->at[k] = pos + 2;
		attrs->len[k] = n;
		pos += 2 + n;
	}
	attrs->decoded = pos - OTEL_ATTRS_OFFSET;
}

/*
 * The value of @key, NUL-terminated in @buf; with @escape, a control byte,
 * '"' and '\\' as \xNN.  Returns its length, or -1 when the record has no
 * such key.
 */
int otel_attrs__value(const struct tls_dump *tls, const struct otel_attrs *attrs,
		      unsigned int key, bool escape, char *buf, size_t size)
{
	size_t n = 0;
	u64 i;

	if (key > 255 || !attrs->at[key] || !size)
		return -1;
	for (i = 0; i < attrs->len[key]; i++) {
		u8 c = tls_dump__byte(tls, attrs->at[key] + i);

		if (escape && (c < 0x20 || c == 0x7f || c == '"' || c == '\\')) {
			if (n + 4 >= size)
				break;
			n += sprintf(buf + n, "\\x%02x", c);
		} else {
			if (n + 1 >= size)
				break;
			buf[n++] = c;
		}
	}
	buf[n] = '\0';
	return n;
}

static size_t tls_user__fprintf_attrs(const struct tls_dump *tls, u16 flags,
				      const struct otel_process_ctx *ctx, FILE *fp)
{
	char value[OTEL_VALUE_SIZE];
	struct otel_attrs attrs;
	size_t printed;
	unsigned int key;

	tls_user__otel_attrs(tls, flags, &attrs);
	if (!attrs.size)
		return 0;

	printed = fprintf(fp, " attrs:");
	for (key = 0; key < 256; key++) {
		const char *name = otel_process_ctx__key(ctx, key);

		if (otel_attrs__value(tls, &attrs, key, true, value, sizeof(value)) < 0)
			continue;
		if (name)
			printed += fprintf(fp, " %s=\"%s\"", name, value);
		else
			printed += fprintf(fp, " %u=\"%s\"", key, value);
	}
	/* The dump ends first: say which size would have all of them */
	if (attrs.in_dump < attrs.size) {
		u64 want = round_up(OTEL_ATTRS_OFFSET + attrs.size, 8);

		printed += fprintf(fp, " (%llu of %llu bytes in the sample:",
				   (unsigned long long)attrs.in_dump,
				   (unsigned long long)attrs.size);
		printed += fprintf(fp, " --tls-user=otel,size=%llu)",
				   (unsigned long long)min(want, (u64)PERF_TLS_USER_MAX_SIZE));
	} else if (attrs.decoded < attrs.size)
		printed += fprintf(fp, " (%llu of %llu bytes decoded)",
				   (unsigned long long)attrs.decoded,
				   (unsigned long long)attrs.size);
	return printed;
}

size_t tls_user__fprintf(const struct tls_dump *tls, u16 flags,
			 const struct otel_process_ctx *ctx, FILE *fp)
{
	size_t printed = fprintf(fp, " tls:");
	u8 ids[OTEL_TRACE_ID_SIZE + OTEL_SPAN_ID_SIZE];
	u64 i;

	if (!tls->dyn_size)
		return printed + fprintf(fp, " -");

	printed += fprintf(fp, " ");
	for (i = 0; i < tls->dyn_size; i++)
		printed += fprintf(fp, "%02x", tls_dump__byte(tls, i));

	if (tls_user__is_otel(tls, flags)) {
		tls_dump__read(tls, 0, ids, sizeof(ids));
		printed += fprintf(fp, " ");
		printed += tls_user__fprintf_ids(ids, ids + OTEL_TRACE_ID_SIZE,
						 fp);
		printed += tls_user__fprintf_attrs(tls, flags, ctx, fp);
	}
	return printed;
}

/*
 * What became of the PERF_SAMPLE_TLS_USER bytes of each process's samples:
 * with bytes, or why not.  The kernel says why a read found nothing in the
 * first byte of the dump (enum perf_tls_user_unread); perf adds the
 * samples whose dump is empty (no user context, or no room in the
 * record), those whose deferred record never came, and OpenTelemetry
 * records read whole with their valid byte clear.
 */
enum tls_stat {
	TLS_STAT_NO_DUMP = PERF_TLS_USER_UNREAD_NO_MEMORY + 1,
	TLS_STAT_NO_RECORD,
	TLS_STAT_OVER_LIMIT,
	TLS_STAT_NOT_MERGED,
	TLS_STAT_SHORT,
	TLS_STAT_NOT_VALID,
	TLS_STAT__NR,
};

static const char * const tls_stat_names[TLS_STAT__NR] = {
	[PERF_TLS_USER_UNREAD_EMPTY]		 = "0 bytes long",
	[PERF_TLS_USER_UNREAD_NO_THREAD_POINTER] = "no thread pointer",
	[PERF_TLS_USER_UNREAD_UNREGISTERED]	 = "not registered, no program for the process",
	[PERF_TLS_USER_UNREAD_NULL_POINTER]	 = "NULL pointer, no context published",
	[PERF_TLS_USER_UNREAD_BAD_ADDRESS]	 = "bad address",
	[PERF_TLS_USER_UNREAD_FAULT]		 = "page not present or unreadable",
	[PERF_TLS_USER_UNREAD_NOT_NOW]		 = "not readable where sampled",
	[PERF_TLS_USER_UNREAD_NO_MEMORY]	 = "no kernel read buffer",
	[TLS_STAT_NO_DUMP]			 = "no user context",
	[TLS_STAT_NO_RECORD]			 = "cookie without record",
	[TLS_STAT_OVER_LIMIT]			 = "past call-graph.defer-queue-size",
	[TLS_STAT_NOT_MERGED]			 = "deferred, not merged",
	[TLS_STAT_SHORT]			 = "cut before the ids",
	[TLS_STAT_NOT_VALID]			 = "valid clear",
};

struct tls_proc_stats {
	pid_t	pid;
	char	comm[16];
	u64	samples;
	u64	with_bytes;
	u64	without[TLS_STAT__NR];
};

struct tls_user_stats {
	struct hashmap	*procs;		/* pid -> struct tls_proc_stats */
	u64		samples;
	u64		with_bytes;
};

static size_t tls_stats__hash(long key, void *ctx __maybe_unused)
{
	return key;
}

static bool tls_stats__equal(long a, long b, void *ctx __maybe_unused)
{
	return a == b;
}

struct tls_user_stats *tls_user_stats__new(void)
{
	struct tls_user_stats *stats = zalloc(sizeof(*stats));

	if (!stats)
		return NULL;
	stats->procs = hashmap__new(tls_stats__hash, tls_stats__equal, NULL);
	if (IS_ERR(stats->procs)) {
		free(stats);
		return NULL;
	}
	return stats;
}

void tls_user_stats__delete(struct tls_user_stats *stats)
{
	struct hashmap_entry *cur;
	size_t bkt;

	if (!stats)
		return;
	hashmap__for_each_entry(stats->procs, cur, bkt)
		free(cur->pvalue);
	hashmap__free(stats->procs);
	free(stats);
}

/* The event reads an OpenTelemetry record: --tls-user=otel's program */
static bool tls_user__attr_is_otel(const struct perf_event_attr *attr)
{
	return (attr->tls_user_flags & PERF_TLS_USER_DEREF) &&
	       attr->sample_tls_user >= OTEL_RECORD_MIN_SIZE &&
	       ((attr->tls_user_len_size == 2 &&
		 attr->tls_user_len_offset == OTEL_ATTRS_SIZE_OFFSET &&
		 attr->tls_user_len_base == OTEL_ATTRS_OFFSET) ||
		attr->sample_tls_user == OTEL_TLS_SIZE);
}

/* What became of @sample's bytes: -1 for bytes, else an enum tls_stat */
static int tls_user__stat(const struct perf_sample *sample,
			  const struct perf_event_attr *attr)
{
	const struct tls_dump *tls = &sample->tls_user;

	if (sample->deferred_tls)
		return TLS_STAT_NOT_MERGED;
	if (sample->tls_over_limit)
		return TLS_STAT_OVER_LIMIT;
	if (sample->tls_no_record)
		return TLS_STAT_NO_RECORD;
	if (!tls->size || !tls->data)
		return TLS_STAT_NO_DUMP;
	if (!tls->dyn_size)
		return tls_dump__unread(tls);
	if (!tls_user__attr_is_otel(attr))
		return -1;
	if (tls->dyn_size < OTEL_RECORD_MIN_SIZE)
		return TLS_STAT_SHORT;
	if (tls_dump__byte(tls, OTEL_VALID_OFFSET) != 1)
		return TLS_STAT_NOT_VALID;
	return -1;
}

int tls_user_stats__add(struct tls_user_stats *stats, const struct perf_sample *sample,
			const struct perf_event_attr *attr, const char *comm)
{
	struct tls_proc_stats *p;
	int stat = tls_user__stat(sample, attr);

	if (!hashmap__find(stats->procs, sample->pid, &p)) {
		p = zalloc(sizeof(*p));
		if (!p)
			return -ENOMEM;
		p->pid = sample->pid;
		if (hashmap__add(stats->procs, sample->pid, p)) {
			free(p);
			return -ENOMEM;
		}
	}
	/* Named at its first sample, unless perf has no name for it yet */
	if (!p->comm[0] && comm && comm[0] != ':')
		snprintf(p->comm, sizeof(p->comm), "%s", comm);

	stats->samples++;
	p->samples++;
	if (stat < 0) {
		stats->with_bytes++;
		p->with_bytes++;
	} else {
		p->without[stat]++;
	}
	return 0;
}

static int tls_proc_stats__cmp(const void *a, const void *b)
{
	const struct tls_proc_stats *pa = *(const struct tls_proc_stats **)a;
	const struct tls_proc_stats *pb = *(const struct tls_proc_stats **)b;
	u64 wa = pa->samples - pa->with_bytes, wb = pb->samples - pb->with_bytes;

	if (wa != wb)
		return wa < wb ? 1 : -1;
	return pa->pid - pb->pid;
}

/*
 * A PERF_RECORD_COMM of @pid's main thread (@tid == @pid): the name the
 * process is listed with, when it has samples: the last name it took,
 * also when the events are not in time order (no sample_id_all).
 */
void tls_user_stats__comm(struct tls_user_stats *stats, pid_t pid, pid_t tid,
			  const char *comm)
{
	struct tls_proc_stats *p;

	if (stats && pid == tid && hashmap__find(stats->procs, pid, &p))
		snprintf(p->comm, sizeof(p->comm), "%s", comm);
}

/* Samples with PERF_SAMPLE_TLS_USER but no bytes */
u64 tls_user_stats__without(const struct tls_user_stats *stats)
{
	return stats ? stats->samples - stats->with_bytes : 0;
}

/* At most this many processes are listed, those with most samples without bytes */
#define TLS_STATS_PROCS	10

/*
 * "tls: N samples, M with bytes, K without", then one line per process
 * with samples without bytes: how many, and why.  Each line starts with
 * @prefix.
 */
size_t tls_user_stats__fprintf(const struct tls_user_stats *stats, const char *prefix,
			       FILE *fp)
{
	struct tls_proc_stats **procs;
	struct hashmap_entry *cur;
	size_t bkt, n = 0, i, printed;
	int s;

	if (!stats || !stats->samples)
		return 0;
	printed = fprintf(fp, "%stls: %llu samples, %llu with bytes, %llu without\n",
			  prefix, (unsigned long long)stats->samples,
			  (unsigned long long)stats->with_bytes,
			  (unsigned long long)(stats->samples - stats->with_bytes));
	if (stats->samples == stats->with_bytes)
		return printed;

	procs = calloc(hashmap__size(stats->procs), sizeof(*procs));
	if (!procs)
		return printed;
	hashmap__for_each_entry(stats->procs, cur, bkt) {
		struct tls_proc_stats *p = cur->pvalue;

		if (p->samples != p->with_bytes)
			procs[n++] = p;
	}
	qsort(procs, n, sizeof(*procs), tls_proc_stats__cmp);
	for (i = 0; i < n && i < TLS_STATS_PROCS; i++) {
		const char *sep = ": ";

		printed += fprintf(fp, "%stls:   pid %d (%s): %llu of %llu samples without bytes",
				   prefix, procs[i]->pid,
				   procs[i]->comm[0] ? procs[i]->comm : "?",
				   (unsigned long long)(procs[i]->samples - procs[i]->with_bytes),
				   (unsigned long long)procs[i]->samples);
		for (s = 0; s < TLS_STAT__NR; s++) {
			if (!procs[i]->without[s])
				continue;
			printed += fprintf(fp, "%s%llu %s", sep,
					   (unsigned long long)procs[i]->without[s],
					   tls_stat_names[s]);
			sep = ", ";
		}
		printed += fprintf(fp, "\n");
	}
	if (n > TLS_STATS_PROCS)
		printed += fprintf(fp, "%stls:   and %zu more processes\n", prefix,
				   n - TLS_STATS_PROCS);
	free(procs);
	return printed;
}
