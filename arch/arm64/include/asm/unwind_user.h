/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _ASM_ARM64_UNWIND_USER_H
#define _ASM_ARM64_UNWIND_USER_H

#include <asm/compiler.h>
#include <asm/ptrace.h>

/*
 * AArch64 frame record: x29 points at the saved caller x29, the saved x30
 * (return address) is the next word.  AArch32 tasks are not walked.
 */
static inline bool arch_unwind_user_fp_supported(struct pt_regs *regs)
{
	return !compat_user_mode(regs);
}

/* Return addresses may carry a pointer authentication code. */
static inline unsigned long arch_unwind_user_fp_ra(unsigned long ra)
{
	return ptrauth_strip_user_insn_pac(ra);
}

#endif /* _ASM_ARM64_UNWIND_USER_H */
