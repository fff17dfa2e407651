/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __PERF_TLS_LAYOUT_H
#define __PERF_TLS_LAYOUT_H

#include <sys/types.h>
#include <linux/types.h>

/*
 * Where a TLS variable is, from the thread pointer, in the static TLS
 * block that glibc's ld.so lays out at process start for the executable
 * and the libraries it loads then (LD_PRELOAD and the DT_NEEDED closure).
 */

/* The environment the dynamic linker of the program will see */
struct tls_layout_env {
	const char	*ld_library_path;
	const char	*ld_preload;
};

enum tls_layout_err {
	TLS_LAYOUT_OK,
	TLS_LAYOUT_NO_PROG,	/* the program cannot be opened */
	TLS_LAYOUT_SCRIPT,	/* it is a #! script */
	TLS_LAYOUT_NOT_ELF,	/* not an ELF file perf can read */
	TLS_LAYOUT_ARCH,	/* not x86_64 or aarch64, 64-bit native endian */
	TLS_LAYOUT_NO_SYM,	/* no object loaded at startup defines it */
	TLS_LAYOUT_DLOPEN,	/* only a dlopen()ed object defines it */
	TLS_LAYOUT_BAD_TLS,	/* defined, but the object's PT_TLS is unusable */
	TLS_LAYOUT_NOMEM,
};

struct tls_layout_result {
	enum tls_layout_err	err;
	s64			offset;		/* from the thread pointer */
	char			where[4096];	/* the defining object, or the program */
	int			nr_objs;	/* objects loaded at startup */
	int			nr_missing;	/* DT_NEEDED perf did not find */
	char			missing[256];	/* the first one of them */
};

void tls_layout__of_prog(const char *path, const struct tls_layout_env *env,
			 const char *sym, struct tls_layout_result *res);
void tls_layout__of_pid(pid_t pid, const char *sym, struct tls_layout_result *res);
/* Does a process map an object that defines @sym?  Cheap filter for -a */
bool tls_layout__pid_maps_sym(pid_t pid, const char *sym);

#endif /* __PERF_TLS_LAYOUT_H */
