// SPDX-License-Identifier: GPL-2.0
/*
 * The offset from the thread pointer of a TLS variable, computed as glibc's
 * dynamic linker lays out the static TLS block at process start.
 *
 * The objects loaded at startup are the executable, the LD_PRELOAD objects
 * and the DT_NEEDED closure, mapped breadth first.  Each object with a
 * non-empty PT_TLS gets the next module id in that order, and the blocks are
 * placed in module id order:
 *  - x86_64 (TLS variant II) below the thread pointer: a block ends at the
 *    lowest free offset, rounded up to its alignment, or fills a gap left
 *    by an earlier alignment when it fits there;
 *  - aarch64 (TLS variant I) above the 16-byte TCB at the thread pointer,
 *    the same way upwards.
 * A block keeps the misalignment of its PT_TLS p_vaddr modulo p_align.
 * Objects loaded later by dlopen() get dynamic TLS, reached through the DTV:
 * no fixed offset from the thread pointer.
 *
 * Every field of every file is bounds checked before use: the files may be
 * anything.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <linux/bits.h>
#include <linux/kernel.h>
#include <linux/zalloc.h>
#include "debug.h"
#include "tls-layout.h"

#define TLS_MAX_OBJS	256		/* objects of a process perf follows */
#define TLS_MAX_PHNUM	512
#define TLS_MAX_DYN	8192		/* entries of PT_DYNAMIC */
#define TLS_MAX_NEEDED	512
#define TLS_MAX_STRSZ	(64u << 20)	/* dynamic string table */
#define TLS_MAX_SHNUM	8192
#define TLS_MAX_MEMSZ	BIT_ULL(30)	/* PT_TLS p_memsz */
#define TLS_MAX_ALIGN	BIT_ULL(24)	/* PT_TLS p_align */
#define TLS_TCB_AARCH64	16		/* TCB at the thread pointer */
#define TLS_NO_STR	((u64)-1)

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define TLS_ELFDATA	ELFDATA2LSB
#else
#define TLS_ELFDATA	ELFDATA2MSB
#endif

struct tls_elf {
	int		fd;
	u64		size;
	dev_t		dev;
	ino_t		ino;
	Elf64_Ehdr	eh;
	Elf64_Phdr	*ph;
	Elf64_Phdr	*tls;		/* PT_TLS with p_memsz > 0, or NULL */
	bool		tls_bad;	/* a PT_TLS perf cannot place */
	char		*dynstr;	/* NUL at dynstr[dynstr_size] */
	u64		dynstr_size;
	u64		needed[TLS_MAX_NEEDED];	/* offsets in dynstr */
	int		nr_needed;
	u64		runpath, rpath, soname;	/* offsets in dynstr */
};

struct tls_obj {
	struct tls_elf	elf;
	char		path[PATH_MAX];
	int		loader;		/* index of the object that needs it */
	s64		tls_offset;	/* of its block from the thread pointer */
	bool		used;		/* pid mode: in the startup closure */
};

struct tls_proc {
	struct tls_obj	*objs;
	int		nr;
	u16		machine;
	const char	*ld_library_path;
	const char	*ld_preload;
	/* -p: the files the process maps, candidates for every DT_NEEDED */
	struct tls_obj	*maps;
	int		nr_maps;
	char		root[64];	/* /proc/PID/root, or "" */
	int		nr_missing;
	char		missing[256];
};

static int tls_elf__read(const struct tls_elf *e, void *buf, u64 size, u64 off)
{
	if (off > e->size || size > e->size - off)
		return -1;
	return pread(e->fd, buf, size, off) == (ssize_t)size ? 0 : -1;
}

static void tls_elf__close(struct tls_elf *e)
{
	if (e->fd >= 0)
		close(e->fd);
	e->fd = -1;
	zfree(&e->ph);
	zfree(&e->dynstr);
}

static const char *tls_elf__str(const struct tls_elf *e, u64 off)
{
	if (!e->dynstr || off >= e->dynstr_size)
		return NULL;
	return e->dynstr + off;
}

/* The file offset of the virtual address @vaddr, in a PT_LOAD's file bytes */
static int tls_elf__vaddr_off(const struct tls_elf *e, u64 vaddr, u64 *off)
{
	int i;

	for (i = 0; i < e->eh.e_phnum; i++) {
		const Elf64_Phdr *ph = &e->ph[i];

		if (ph->p_type != PT_LOAD || vaddr < ph->p_vaddr ||
		    vaddr - ph->p_vaddr >= ph->p_filesz ||
		    ph->p_offset > e->size ||
		    vaddr - ph->p_vaddr > e->size - ph->p_offset)
			continue;
		*off = ph->p_offset + (vaddr - ph->p_vaddr);
		return 0;
	}
	return -1;
}

static void tls_elf__read_dynamic(struct tls_elf *e, const Elf64_Phdr *dph)
{
	u64 i, n = min_t(u64, dph->p_filesz / sizeof(Elf64_Dyn), TLS_MAX_DYN);
	u64 strtab = 0, strsz = 0, off;
	bool has_strtab = false;
	Elf64_Dyn *dyn;

	dyn = calloc(n ? n : 1, sizeof(*dyn));
	if (!dyn || tls_elf__read(e, dyn, n * sizeof(*dyn), dph->p_offset)) {
		free(dyn);
		return;
	}
	for (i = 0; i < n && dyn[i].d_tag != DT_NULL; i++) {
		switch (dyn[i].d_tag) {
		case DT_NEEDED:
			if (e->nr_needed < TLS_MAX_NEEDED)
				e->needed[e->nr_needed++] = dyn[i].d_un.d_val;
			break;
		case DT_RUNPATH:
			e->runpath = dyn[i].d_un.d_val;
			break;
		case DT_RPATH:
			e->rpath = dyn[i].d_un.d_val;
			break;
		case DT_SONAME:
			e->soname = dyn[i].d_un.d_val;
			break;
		case DT_STRTAB:
			strtab = dyn[i].d_un.d_ptr;
			has_strtab = true;
			break;
		case DT_STRSZ:
			strsz = dyn[i].d_un.d_val;
			break;
		default:
			break;
		}
	}
	free(dyn);

	if (!has_strtab || !strsz || strsz > TLS_MAX_STRSZ ||
	    tls_elf__vaddr_off(e, strtab, &off))
		return;
	e->dynstr = malloc(strsz + 1);
	if (!e->dynstr)
		return;
	if (tls_elf__read(e, e->dynstr, strsz, off)) {
		zfree(&e->dynstr);
		return;
	}
	e->dynstr[strsz] = '\0';
	e->dynstr_size = strsz;
}

/*
 * Open @path as a 64-bit native endian ELF file of @machine (0: x86_64 or
 * aarch64) and read what the layout needs: PT_TLS and the dynamic section.
 */
static enum tls_layout_err tls_elf__open(struct tls_elf *e, const char *path, u16 machine)
{
	const Elf64_Phdr *dph = NULL;
	struct stat st;
	int i;

	memset(e, 0, sizeof(*e));
	e->runpath = TLS_NO_STR;
	e->rpath = TLS_NO_STR;
	e->soname = TLS_NO_STR;
	/*
	 * Only regular files: under -a perf reads whatever processes map,
	 * and opening a device or a FIFO can block or have side effects.
	 * O_NONBLOCK covers a file swapped for a FIFO after the stat().
	 */
	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return TLS_LAYOUT_NO_PROG;
	e->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (e->fd < 0)
		return TLS_LAYOUT_NO_PROG;
	if (fstat(e->fd, &st) || !S_ISREG(st.st_mode)) {
		tls_elf__close(e);
		return TLS_LAYOUT_NO_PROG;
	}
	e->size = st.st_size;
	e->dev = st.st_dev;
	e->ino = st.st_ino;

	if (tls_elf__read(e, &e->eh, sizeof(e->eh), 0)) {
		char magic[2];

		if (!tls_elf__read(e, magic, 2, 0) && !memcmp(magic, "#!", 2)) {
			tls_elf__close(e);
			return TLS_LAYOUT_SCRIPT;
		}
		goto out_not_elf;
	}
	if (!memcmp(e->eh.e_ident, "#!", 2)) {
		tls_elf__close(e);
		return TLS_LAYOUT_SCRIPT;
	}
	if (memcmp(e->eh.e_ident, ELFMAG, SELFMAG))
		goto out_not_elf;
	if (e->eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    e->eh.e_ident[EI_DATA] != TLS_ELFDATA ||
	    (e->eh.e_machine != EM_X86_64 && e->eh.e_machine != EM_AARCH64) ||
	    (machine && e->eh.e_machine != machine)) {
		tls_elf__close(e);
		return TLS_LAYOUT_ARCH;
	}
	if (e->eh.e_phentsize != sizeof(Elf64_Phdr) || !e->eh.e_phnum ||
	    e->eh.e_phnum > TLS_MAX_PHNUM)
		goto out_not_elf;
	e->ph = calloc(e->eh.e_phnum, sizeof(*e->ph));
	if (!e->ph ||
	    tls_elf__read(e, e->ph, (u64)e->eh.e_phnum * sizeof(*e->ph), e->eh.e_phoff))
		goto out_not_elf;

	for (i = 0; i < e->eh.e_phnum; i++) {
		Elf64_Phdr *ph = &e->ph[i];

		if (ph->p_type == PT_DYNAMIC && !dph) {
			dph = ph;
		} else if (ph->p_type == PT_TLS && ph->p_memsz) {
			/* ld.so takes p_align as it is: a power of two */
			if (ph->p_memsz > TLS_MAX_MEMSZ || ph->p_filesz > ph->p_memsz ||
			    ph->p_align > TLS_MAX_ALIGN ||
			    (ph->p_align & (ph->p_align - 1)))
				e->tls_bad = true;
			else
				e->tls = ph;
		}
	}
	if (dph)
		tls_elf__read_dynamic(e, dph);
	return TLS_LAYOUT_OK;

out_not_elf:
	tls_elf__close(e);
	return TLS_LAYOUT_NOT_ELF;
}

/* Is the defined STT_TLS symbol @name in the symbol table @sh?  Its value */
static int tls_elf__find_in(const struct tls_elf *e, const Elf64_Shdr *shdrs,
			    const Elf64_Shdr *sh, const char *name, u64 *value)
{
	size_t len = strlen(name) + 1;
	const Elf64_Shdr *strtab;
	Elf64_Sym syms[128];
	char buf[256];
	u64 i, n;

	if (sh->sh_entsize != sizeof(Elf64_Sym) || sh->sh_link >= e->eh.e_shnum ||
	    len > sizeof(buf) || sh->sh_offset > e->size ||
	    sh->sh_size > e->size - sh->sh_offset)
		return -ENOENT;
	strtab = &shdrs[sh->sh_link];
	n = sh->sh_size / sizeof(Elf64_Sym);

	for (i = 0; i < n; i += ARRAY_SIZE(syms)) {
		u64 j, chunk = min_t(u64, n - i, ARRAY_SIZE(syms));

		if (tls_elf__read(e, syms, chunk * sizeof(Elf64_Sym),
				  sh->sh_offset + i * sizeof(Elf64_Sym)))
			return -ENOENT;
		for (j = 0; j < chunk; j++) {
			const Elf64_Sym *sym = &syms[j];

			/* An undefined symbol is a reference to another object's */
			if (ELF64_ST_TYPE(sym->st_info) != STT_TLS ||
			    sym->st_shndx == SHN_UNDEF ||
			    sym->st_name >= strtab->sh_size ||
			    len > strtab->sh_size - sym->st_name ||
			    strtab->sh_offset > e->size ||
			    sym->st_name > e->size - strtab->sh_offset ||
			    tls_elf__read(e, buf, len, strtab->sh_offset + sym->st_name) ||
			    memcmp(buf, name, len))
				continue;
			*value = sym->st_value;
			return 0;
		}
	}
	return -ENOENT;
}

/* The value of the TLS symbol @name that @e defines: .symtab, then .dynsym */
static int tls_elf__find_sym(const struct tls_elf *e, const char *name, u64 *value)
{
	static const u32 types[] = { SHT_SYMTAB, SHT_DYNSYM };
	Elf64_Shdr *shdrs;
	int ret = -ENOENT;
	unsigned int t, i;

	if (e->eh.e_shentsize != sizeof(Elf64_Shdr) || !e->eh.e_shnum ||
	    e->eh.e_shnum > TLS_MAX_SHNUM)
		return -ENOENT;
	shdrs = calloc(e->eh.e_shnum, sizeof(*shdrs));
	if (!shdrs)
		return -ENOMEM;
	if (tls_elf__read(e, shdrs, (u64)e->eh.e_shnum * sizeof(*shdrs), e->eh.e_shoff))
		goto out;
	/* One table of each type (the gABI allows no more): a bounded scan */
	for (t = 0; t < ARRAY_SIZE(types) && ret; t++) {
		for (i = 0; i < e->eh.e_shnum; i++) {
			if (shdrs[i].sh_type == types[t]) {
				ret = tls_elf__find_in(e, shdrs, &shdrs[i], name, value);
				break;
			}
		}
	}
out:
	free(shdrs);
	return ret;
}

static const char *tls_basename(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* @dir with $ORIGIN and ${ORIGIN} replaced by the directory of @path */
static int tls_expand_origin(char *out, size_t size, const char *dir, size_t dlen,
			     const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t olen = slash ? (size_t)(slash - path) : 1, n = 0, i = 0;
	const char *origin = slash ? path : ".";

	while (i < dlen) {
		size_t skip = 0;

		if (!strncmp(dir + i, "$ORIGIN", 7) && dlen - i >= 7)
			skip = 7;
		else if (!strncmp(dir + i, "${ORIGIN}", 9) && dlen - i >= 9)
			skip = 9;
		if (skip) {
			if (n + olen >= size)
				return -1;
			memcpy(out + n, origin, olen);
			n += olen;
			i += skip;
			continue;
		}
		if (n + 1 >= size)
			return -1;
		out[n++] = dir[i++];
	}
	out[n] = '\0';
	return 0;
}

static bool tls_proc__loaded(const struct tls_proc *p, const char *name)
{
	int i;

	for (i = 0; i < p->nr; i++) {
		const struct tls_elf *e = &p->objs[i].elf;
		const char *soname = tls_elf__str(e, e->soname);

		if ((soname && !strcmp(soname, name)) ||
		    !strcmp(tls_basename(p->objs[i].path), name) ||
		    (i && !strcmp(p->objs[i].path, name)))
			return true;
	}
	return false;
}

/* Add the object at @path, loaded for object @loader; 1: added */
static int tls_proc__try(struct tls_proc *p, const char *path, int loader)
{
	struct tls_obj *obj;
	int i;

	if (p->nr >= TLS_MAX_OBJS)
		return -1;
	obj = &p->objs[p->nr];
	if (tls_elf__open(&obj->elf, path, p->machine) != TLS_LAYOUT_OK)
		return 0;
	for (i = 0; i < p->nr; i++) {
		if (p->objs[i].elf.dev == obj->elf.dev &&
		    p->objs[i].elf.ino == obj->elf.ino) {
			tls_elf__close(&obj->elf);
			return 1;	/* the same file under another name */
		}
	}
	snprintf(obj->path, sizeof(obj->path), "%s", path);
	obj->loader = loader;
	p->nr++;
	return 1;
}

/* Try @name in each directory of the colon separated @dirs */
static int tls_proc__try_dirs(struct tls_proc *p, const char *dirs, const char *origin,
			      const char *name, int loader)
{
	char dir[PATH_MAX], path[PATH_MAX];
	const char *d = dirs, *end;
	int ret;

	while (d && *d) {
		end = strchrnul(d, ':');
		if (end == d) {		/* an empty entry is the current directory */
			snprintf(dir, sizeof(dir), ".");
		} else if (tls_expand_origin(dir, sizeof(dir), d, end - d, origin)) {
			d = *end ? end + 1 : end;
			continue;
		}
		if (snprintf(path, sizeof(path), "%s/%s", dir, name) < (int)sizeof(path)) {
			ret = tls_proc__try(p, path, loader);
			if (ret)
				return ret;
		}
		d = *end ? end + 1 : end;
	}
	return 0;
}

/* The directories of /etc/ld.so.conf, with its includes, colon separated */
static void tls_ld_so_conf(const char *file, char *dirs, size_t size, int depth)
{
	char line[PATH_MAX];
	FILE *fp;

	if (depth > 4)
		return;
	fp = fopen(file, "re");
	if (!fp)
		return;
	while (fgets(line, sizeof(line), fp)) {
		char *s = line, *e;

		s[strcspn(s, "#\n")] = '\0';
		s += strspn(s, " \t");
		for (e = s + strlen(s); e > s && (e[-1] == ' ' || e[-1] == '\t'); e--)
			e[-1] = '\0';
		if (!*s)
			continue;
		if (!strncmp(s, "include", 7) && (s[7] == ' ' || s[7] == '\t')) {
			char pattern[PATH_MAX];
			glob_t g;
			size_t i;

			s += 8 + strspn(s + 8, " \t");
			if (*s == '/')
				snprintf(pattern, sizeof(pattern), "%s", s);
			else
				snprintf(pattern, sizeof(pattern), "/etc/%s", s);
			if (glob(pattern, 0, NULL, &g))
				continue;
			for (i = 0; i < g.gl_pathc; i++)
				tls_ld_so_conf(g.gl_pathv[i], dirs, size, depth + 1);
			globfree(&g);
		} else if (*s == '/' && strlen(dirs) + strlen(s) + 2 < size) {
			if (*dirs)
				strcat(dirs, ":");
			strcat(dirs, s);
		}
	}
	fclose(fp);
}

/* Find DT_NEEDED @name of object @loader as ld.so does for a new process */
static int tls_proc__search(struct tls_proc *p, const char *name, int loader)
{
	static char conf_dirs[8192];
	static bool conf_read;
	const char *triplet = p->machine == EM_X86_64 ? "x86_64" : "aarch64";
	char sys_dirs[512], path[PATH_MAX];
	bool runpath = false;
	int i, ret;

	if (strchr(name, '/')) {
		if (tls_expand_origin(path, sizeof(path), name, strlen(name),
				      p->objs[loader].path))
			return 0;
		return tls_proc__try(p, path, loader);
	}

	/* DT_RPATH of the loader and its loaders, unless it has DT_RUNPATH */
	for (i = loader; i >= 0; i = i ? p->objs[i].loader : -1) {
		const struct tls_elf *e = &p->objs[i].elf;

		if (i == loader && tls_elf__str(e, e->runpath)) {
			runpath = true;
			break;
		}
		ret = tls_proc__try_dirs(p, tls_elf__str(e, e->rpath), p->objs[i].path,
					 name, loader);
		if (ret)
			return ret;
		if (!i)
			break;
	}
	ret = tls_proc__try_dirs(p, p->ld_library_path, "", name, loader);
	if (ret)
		return ret;
	if (runpath) {
		const struct tls_elf *e = &p->objs[loader].elf;

		ret = tls_proc__try_dirs(p, tls_elf__str(e, e->runpath),
					 p->objs[loader].path, name, loader);
		if (ret)
			return ret;
	}
	if (!conf_read) {
		tls_ld_so_conf("/etc/ld.so.conf", conf_dirs, sizeof(conf_dirs), 0);
		conf_read = true;
	}
	ret = tls_proc__try_dirs(p, conf_dirs, "", name, loader);
	if (ret)
		return ret;
	snprintf(sys_dirs, sizeof(sys_dirs),
		 "/lib/%s-linux-gnu:/usr/lib/%s-linux-gnu:/lib64:/usr/lib64:/lib:/usr/lib",
		 triplet, triplet);
	return tls_proc__try_dirs(p, sys_dirs, "", name, loader);
}

/* -p: the mapped file that DT_NEEDED @name is, by file name or soname */
static int tls_proc__from_maps(struct tls_proc *p, const char *name, int loader)
{
	int i, pass;

	if (p->nr >= TLS_MAX_OBJS)
		return -1;
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < p->nr_maps; i++) {
			struct tls_obj *m = &p->maps[i];
			const char *soname = tls_elf__str(&m->elf, m->elf.soname);

			if (m->used || (pass == 0 && strcmp(tls_basename(m->path), name)) ||
			    (pass == 1 && (!soname || strcmp(soname, name))))
				continue;
			/* Moved into the closure, the fd with it */
			p->objs[p->nr] = *m;
			p->objs[p->nr].loader = loader;
			m->used = true;
			m->elf.fd = -1;
			m->elf.ph = NULL;
			m->elf.dynstr = NULL;
			p->nr++;
			return 1;
		}
	}
	return 0;
}

/* Which process-start objects: executable, LD_PRELOAD, DT_NEEDED breadth first */
static void tls_proc__closure(struct tls_proc *p)
{
	char *preload = p->ld_preload ? strdup(p->ld_preload) : NULL;
	char *tok, *saveptr = NULL;
	int i, n, ret;

	for (tok = preload ? strtok_r(preload, " :", &saveptr) : NULL; tok;
	     tok = strtok_r(NULL, " :", &saveptr)) {
		if (tls_proc__loaded(p, tok))
			continue;
		ret = p->nr_maps ? tls_proc__from_maps(p, tok, 0) : 0;
		if (!ret)
			ret = tls_proc__search(p, tok, 0);
	}
	free(preload);

	for (i = 0; i < p->nr; i++) {
		for (n = 0; n < p->objs[i].elf.nr_needed; n++) {
			const struct tls_elf *e = &p->objs[i].elf;
			const char *name = tls_elf__str(e, e->needed[n]);

			if (!name || !*name || tls_proc__loaded(p, name))
				continue;
			ret = p->nr_maps ? tls_proc__from_maps(p, name, i) : 0;
			if (!ret)
				ret = tls_proc__search(p, name, i);
			if (!ret && !p->nr_missing++)
				snprintf(p->missing, sizeof(p->missing), "%s", name);
		}
	}
}

static u64 tls_align_up(u64 x, u64 align)
{
	return (x + align - 1) & ~(align - 1);
}

/* x86_64, TLS variant II: blocks below the thread pointer */
static void tls_proc__variant2(struct tls_proc *p)
{
	u64 offset = 0, freetop = 0, freebottom = 0;
	int i;

	for (i = 0; i < p->nr; i++) {
		const Elf64_Phdr *tls = p->objs[i].elf.tls;
		u64 align, size, firstbyte, off;

		if (!tls)
			continue;
		align = tls->p_align ? tls->p_align : 1;
		size = tls->p_memsz;
		firstbyte = -tls->p_vaddr & (align - 1);

		/* A gap left below an earlier block by its alignment */
		if (freebottom - freetop >= size) {
			off = tls_align_up(freetop + size - firstbyte, align) + firstbyte;
			if (off <= freebottom) {
				freetop = off;
				p->objs[i].tls_offset = -(s64)off;
				continue;
			}
		}
		off = tls_align_up(offset + size - firstbyte, align) + firstbyte;
		if (off > offset + size + (freebottom - freetop)) {
			freetop = offset;
			freebottom = off - size;
		}
		offset = off;
		p->objs[i].tls_offset = -(s64)off;
	}
}

/* aarch64, TLS variant I: blocks after the TCB at the thread pointer */
static void tls_proc__variant1(struct tls_proc *p)
{
	u64 offset = TLS_TCB_AARCH64, freetop = 0, freebottom = 0;
	int i;

	for (i = 0; i < p->nr; i++) {
		const Elf64_Phdr *tls = p->objs[i].elf.tls;
		u64 align, size, firstbyte, off;

		if (!tls)
			continue;
		align = tls->p_align ? tls->p_align : 1;
		size = tls->p_memsz;
		firstbyte = -tls->p_vaddr & (align - 1);

		if (size <= freetop - freebottom) {
			off = tls_align_up(freebottom, align);
			if (off - freebottom < firstbyte)
				off += align;
			if (off + size - firstbyte <= freetop) {
				p->objs[i].tls_offset = off - firstbyte;
				freebottom = off + size - firstbyte;
				continue;
			}
		}
		off = tls_align_up(offset, align);
		if (off - offset < firstbyte)
			off += align;
		p->objs[i].tls_offset = off - firstbyte;
		if (off - firstbyte - offset > freetop - freebottom) {
			freebottom = offset;
			freetop = off - firstbyte;
		}
		offset = off + size - firstbyte;
	}
}

/* The executable is objs[0]; lay out the process and look @sym up in it */
static void tls_proc__resolve(struct tls_proc *p, const char *sym,
			      struct tls_layout_result *res)
{
	int i, bad = -1;
	u64 value;

	tls_proc__closure(p);
	res->nr_objs = p->nr;
	res->nr_missing = p->nr_missing;
	snprintf(res->missing, sizeof(res->missing), "%s", p->missing);

	/* Module ids follow the load order, and so does the placement */
	if (p->machine == EM_X86_64)
		tls_proc__variant2(p);
	else
		tls_proc__variant1(p);

	/* The first definition in load order is the one every reference binds to */
	for (i = 0; i < p->nr; i++) {
		const struct tls_obj *obj = &p->objs[i];

		if (tls_elf__find_sym(&obj->elf, sym, &value)) {
			/* Its unusable PT_TLS would move every later block */
			if (obj->elf.tls_bad && bad < 0)
				bad = i;
			continue;
		}
		snprintf(res->where, sizeof(res->where), "%s",
			 p->objs[bad >= 0 ? bad : i].path);
		if (bad >= 0 || obj->elf.tls_bad || !obj->elf.tls ||
		    value >= obj->elf.tls->p_memsz) {
			res->err = TLS_LAYOUT_BAD_TLS;
			return;
		}
		res->offset = obj->tls_offset + (s64)value;
		res->err = TLS_LAYOUT_OK;
		pr_debug("tls: %s is at %+lld in %s (TLS block at %+lld, %d objects)\n",
			 sym, (long long)res->offset, obj->path,
			 (long long)obj->tls_offset, p->nr);
		return;
	}
	/* -p: a mapped object outside the startup closure was dlopen()ed */
	for (i = 0; i < p->nr_maps; i++) {
		if (p->maps[i].used || tls_elf__find_sym(&p->maps[i].elf, sym, &value))
			continue;
		snprintf(res->where, sizeof(res->where), "%s", p->maps[i].path);
		res->err = TLS_LAYOUT_DLOPEN;
		return;
	}
	res->err = TLS_LAYOUT_NO_SYM;
}

static void tls_proc__exit(struct tls_proc *p)
{
	int i;

	for (i = 0; i < p->nr; i++)
		tls_elf__close(&p->objs[i].elf);
	for (i = 0; i < p->nr_maps; i++)
		tls_elf__close(&p->maps[i].elf);
	zfree(&p->objs);
	zfree(&p->maps);
}

/* Open the executable as objs[0] */
static enum tls_layout_err tls_proc__init(struct tls_proc *p, const char *exe,
					  const char *name)
{
	enum tls_layout_err err;

	p->objs = calloc(TLS_MAX_OBJS, sizeof(*p->objs));
	if (!p->objs)
		return TLS_LAYOUT_NOMEM;
	err = tls_elf__open(&p->objs[0].elf, exe, 0);
	if (err != TLS_LAYOUT_OK)
		return err;
	snprintf(p->objs[0].path, sizeof(p->objs[0].path), "%s", name);
	p->machine = p->objs[0].elf.eh.e_machine;
	p->nr = 1;
	return TLS_LAYOUT_OK;
}

void tls_layout__of_prog(const char *path, const struct tls_layout_env *env,
			 const char *sym, struct tls_layout_result *res)
{
	struct tls_proc p = {
		.ld_library_path = env ? env->ld_library_path : NULL,
		.ld_preload = env ? env->ld_preload : NULL,
	};

	char *real = realpath(path, NULL);

	memset(res, 0, sizeof(*res));
	snprintf(res->where, sizeof(res->where), "%s", path);
	/* ld.so takes $ORIGIN of the program from its resolved path */
	res->err = tls_proc__init(&p, real ?: path, real ?: path);
	if (res->err == TLS_LAYOUT_OK)
		tls_proc__resolve(&p, sym, res);
	tls_proc__exit(&p);
	free(real);
}

/* The value of the variable @var in /proc/PID/environ, or NULL */
static char *tls_pid_getenv(pid_t pid, const char *var)
{
	size_t len = strlen(var), size = 0, cap = 0;
	char file[64], *buf = NULL, *s, *ret = NULL;
	ssize_t n;
	int fd;

	snprintf(file, sizeof(file), "/proc/%d/environ", pid);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	do {
		if (size + 4096 + 1 > cap) {
			char *nbuf;

			if (cap > (1 << 22))
				break;
			cap = cap ? cap * 2 : 16384;
			nbuf = realloc(buf, cap);
			if (!nbuf)
				break;
			buf = nbuf;
		}
		n = read(fd, buf + size, 4096);
		if (n > 0)
			size += n;
	} while (n > 0);
	close(fd);
	if (!buf)
		return NULL;
	buf[size] = '\0';
	for (s = buf; s < buf + size; s += strlen(s) + 1) {
		if (!strncmp(s, var, len) && s[len] == '=') {
			ret = strdup(s + len + 1);
			break;
		}
	}
	free(buf);
	return ret;
}

/*
 * The files /proc/PID/maps shows, opened through /proc/PID/root when it can
 * be, ELF files of the executable's machine only, each file once.
 */
static void tls_proc__read_maps(struct tls_proc *p, pid_t pid)
{
	char file[64], line[PATH_MAX + 256], path[PATH_MAX + 64];
	FILE *fp;
	int i;

	snprintf(file, sizeof(file), "/proc/%d/maps", pid);
	fp = fopen(file, "re");
	if (!fp)
		return;
	p->maps = calloc(TLS_MAX_OBJS, sizeof(*p->maps));
	if (!p->maps) {
		fclose(fp);
		return;
	}
	while (fgets(line, sizeof(line), fp) && p->nr_maps < TLS_MAX_OBJS) {
		char *name = strchr(line, '/');
		struct tls_obj *m = &p->maps[p->nr_maps];
		bool dup = false;

		if (!name)
			continue;
		name[strcspn(name, "\n")] = '\0';
		if (strstr(name, " (deleted)"))
			continue;
		snprintf(path, sizeof(path), "%s%s", p->root, name);
		if (tls_elf__open(&m->elf, path, p->machine) != TLS_LAYOUT_OK &&
		    (!*p->root || tls_elf__open(&m->elf, name, p->machine) != TLS_LAYOUT_OK))
			continue;
		for (i = 0; i < p->nr_maps && !dup; i++)
			dup = p->maps[i].elf.dev == m->elf.dev && p->maps[i].elf.ino == m->elf.ino;
		dup = dup || (m->elf.dev == p->objs[0].elf.dev &&
			      m->elf.ino == p->objs[0].elf.ino);
		if (dup) {
			tls_elf__close(&m->elf);
			continue;
		}
		snprintf(m->path, sizeof(m->path), "%s", name);
		p->nr_maps++;
	}
	fclose(fp);
}

void tls_layout__of_pid(pid_t pid, const char *sym, struct tls_layout_result *res)
{
	struct tls_proc p = { .nr_maps = 0 };
	char exe[64], name[PATH_MAX];
	char *ld_preload;
	ssize_t n;

	memset(res, 0, sizeof(*res));
	snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
	n = readlink(exe, name, sizeof(name) - 1);
	name[n > 0 ? n : 0] = '\0';
	snprintf(res->where, sizeof(res->where), "%s", n > 0 ? name : exe);

	res->err = tls_proc__init(&p, exe, n > 0 ? name : exe);
	if (res->err != TLS_LAYOUT_OK)
		goto out;
	snprintf(p.root, sizeof(p.root), "/proc/%d/root", pid);
	if (access(p.root, X_OK))
		p.root[0] = '\0';
	tls_proc__read_maps(&p, pid);
	ld_preload = tls_pid_getenv(pid, "LD_PRELOAD");
	p.ld_preload = ld_preload;
	tls_proc__resolve(&p, sym, res);
	free(ld_preload);
out:
	tls_proc__exit(&p);
}

/* -a: files known to define the symbol or not, by device and inode */
struct tls_seen {
	dev_t	dev;
	ino_t	ino;
	bool	defines;
};

bool tls_layout__pid_maps_sym(pid_t pid, const char *sym)
{
	static struct tls_seen *seen;
	static int nr_seen, max_seen;
	char file[64], line[PATH_MAX + 256], path[PATH_MAX + 64];
	bool found = false;
	struct stat st;
	FILE *fp;
	u64 value;
	int i;

	snprintf(file, sizeof(file), "/proc/%d/maps", pid);
	fp = fopen(file, "re");
	if (!fp)
		return false;
	while (!found && fgets(line, sizeof(line), fp)) {
		char *name = strchr(line, '/');
		struct tls_elf e;

		if (!name)
			continue;
		name[strcspn(name, "\n")] = '\0';
		snprintf(path, sizeof(path), "/proc/%d/root%s", pid, name);
		if (stat(path, &st) && stat(name, &st))
			continue;
		for (i = 0; i < nr_seen; i++) {
			if (seen[i].dev == st.st_dev && seen[i].ino == st.st_ino)
				break;
		}
		if (i < nr_seen) {
			found = seen[i].defines;
			continue;
		}
		if (tls_elf__open(&e, path, 0) != TLS_LAYOUT_OK &&
		    tls_elf__open(&e, name, 0) != TLS_LAYOUT_OK)
			continue;
		found = !tls_elf__find_sym(&e, sym, &value);
		tls_elf__close(&e);
		if (nr_seen == max_seen) {
			struct tls_seen *nseen;

			nseen = realloc(seen, (max_seen + 256) * sizeof(*seen));
			if (!nseen)
				continue;
			seen = nseen;
			max_seen += 256;
		}
		seen[nr_seen++] = (struct tls_seen){ st.st_dev, st.st_ino, found };
	}
	fclose(fp);
	return found;
}
