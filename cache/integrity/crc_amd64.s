// Copyright 2026 The pqcache Authors. Licensed under the Apache License, Version 2.0.

#include "textflag.h"

// FOLD128 folds X by 128 bits with the constants in K: X = lo(X)·lo(K) ⊕ hi(X)·hi(K), using T.
#define FOLD(X, K, T) \
	MOVO X, T; \
	PCLMULQDQ $0x00, K, X; \
	PCLMULQDQ $0x11, K, T; \
	PXOR T, X

// func foldCRC64(crc uint64, p []byte, k *[4]uint64) (x0, x1 uint64)
TEXT ·foldCRC64(SB), NOSPLIT, $0-56
	MOVQ crc+0(FP), AX
	MOVQ p_base+8(FP), SI
	MOVQ p_len+16(FP), CX
	MOVQ k+32(FP), DX
	MOVOU (DX), X4   // x^191, x^127: fold by 128 bits
	MOVOU 16(DX), X5 // x^575, x^511: fold by 512 bits

	// The register goes into the first eight bytes, as the table method XORs it in.
	MOVQ AX, X6
	MOVOU (SI), X0
	PXOR X6, X0
	ADDQ $16, SI
	SUBQ $16, CX
	CMPQ CX, $48
	JB   single

	// Four lanes of 16 bytes, each folded over the 64 bytes that follow it.
	MOVOU (SI), X1
	MOVOU 16(SI), X2
	MOVOU 32(SI), X3
	ADDQ $48, SI
	SUBQ $48, CX

loop4:
	CMPQ CX, $64
	JB   merge
	FOLD(X0, X5, X7)
	MOVOU (SI), X6
	PXOR X6, X0
	FOLD(X1, X5, X7)
	MOVOU 16(SI), X6
	PXOR X6, X1
	FOLD(X2, X5, X7)
	MOVOU 32(SI), X6
	PXOR X6, X2
	FOLD(X3, X5, X7)
	MOVOU 48(SI), X6
	PXOR X6, X3
	ADDQ $64, SI
	SUBQ $64, CX
	JMP  loop4

merge:
	// X0·x^384 + X1·x^256 + X2·x^128 + X3, one 128-bit fold at a time.
	FOLD(X0, X4, X7)
	PXOR X1, X0
	FOLD(X0, X4, X7)
	PXOR X2, X0
	FOLD(X0, X4, X7)
	PXOR X3, X0

single:
	CMPQ CX, $16
	JB   done
	FOLD(X0, X4, X7)
	MOVOU (SI), X6
	PXOR X6, X0
	ADDQ $16, SI
	SUBQ $16, CX
	JMP  single

done:
	MOVQ   X0, AX
	PEXTRQ $1, X0, BX
	MOVQ   AX, x0+40(FP)
	MOVQ   BX, x1+48(FP)
	RET
