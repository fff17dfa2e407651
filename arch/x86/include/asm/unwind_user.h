/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _ASM_X86_UNWIND_USER_H
#define _ASM_X86_UNWIND_USER_H

#include <asm/ptrace.h>

/*
 * x86_64 user frame: %rbp points at the saved caller %rbp, the return
 * address is the next word.  Tasks running 32-bit code (ia32) are not
 * walked.
 */
static inline bool arch_unwind_user_fp_supported(struct pt_regs *regs)
{
	return user_64bit_mode(regs);
}

static inline unsigned long arch_unwind_user_fp_ra(unsigned long ra)
{
	return ra;
}

#endif /* _ASM_X86_UNWIND_USER_H */
