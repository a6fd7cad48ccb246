/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * RdmaSock: a small socket-like layer over NDKPI, written as a Windows
 * kernel driver would be. It builds for Linux with the WDK headers of
 * include/ndk/wdk and for Windows with the WDK; nothing in it knows which.
 *
 * One RDMA_SOCKET is one connection: a PD, one CQ whose notifications
 * drive every completion, a QP with pre-posted receive buffers described
 * by logical address mappings (LAMs), and a connector. Buffers the peer
 * may read or write are fast-registered on the socket's QP.
 */
#ifndef RDMA_SOCK_H
#define RDMA_SOCK_H

#include <ntddk.h>
#include <ndis.h>
#include <wsk.h>
#include <wskndk.h>
#include <ndkpi.h>

/* 'kdmR' (sparse refuses multi-character constants) */
#define RDMA_POOL_TAG		0x526d646bU
#define RDMA_RECV_COUNT		8
#define RDMA_MSG_SIZE		1024
#define RDMA_MAX_SGE		2
#define RDMA_QUEUE_DEPTH	32

/* One posted request; its completion sets Done. */
typedef struct _RDMA_OP {
	KEVENT Done;
	NTSTATUS Status;
	ULONG Bytes;
	NDK_OPERATION_TYPE Type;
	ULONG_PTR TypeSpecific;
} RDMA_OP;

/* A message buffer described by a LAM, used with the privileged token. */
typedef struct _RDMA_LAM_BUFFER {
	PUCHAR Buffer;
	ULONG Length;
	PMDL Mdl;
	NDK_LOGICAL_ADDRESS_MAPPING *Lam;
	ULONG Fbo;
	NDK_SGE Sge[RDMA_MAX_SGE];
	ULONG SgeCount;
} RDMA_LAM_BUFFER;

typedef struct _RDMA_RECV {
	RDMA_OP Op;
	RDMA_LAM_BUFFER Data;
} RDMA_RECV;

/* A send in flight: the caller owns it until RdmaWaitSend returns. */
typedef struct _RDMA_SEND {
	RDMA_OP Op;
	RDMA_LAM_BUFFER Data;
} RDMA_SEND;

/* A buffer fast-registered for the peer's RDMA read and write. */
typedef struct _RDMA_REGISTERED_BUFFER {
	LIST_ENTRY Link;
	NDK_MR *Mr;
	PMDL Mdl;
	NDK_LOGICAL_ADDRESS_MAPPING *Lam;
	PVOID BaseVirtualAddress;
	ULONG Length;
	UINT32 RemoteToken;
	UINT32 LocalToken;
} RDMA_REGISTERED_BUFFER;

typedef struct _RDMA_SOCKET {
	NDK_PD *Pd;
	NDK_CQ *Cq;
	NDK_QP *Qp;
	NDK_CONNECTOR *Connector;
	UINT32 PrivilegedToken;
	/* Serializes polling between notifications of the one CQ. */
	KSPIN_LOCK CqLock;
	/* Keeps the notification callback out once the CQ goes. */
	EX_RUNDOWN_REF CqRundown;
	LONG CqErrors;
	LONG Completions;
	RDMA_RECV Recv[RDMA_RECV_COUNT];
	ULONG NextRecv;
	KSPIN_LOCK ListLock;
	LIST_ENTRY Registered;
	KEVENT PeerDisconnected;
	BOOLEAN Connected;
} RDMA_SOCKET;

typedef VOID RDMA_ACCEPT_CALLBACK(PVOID Context, RDMA_SOCKET *Socket,
				  NTSTATUS Status);

typedef struct _RDMA_LISTEN_SOCKET {
	NDK_LISTENER *Listener;
	RDMA_ACCEPT_CALLBACK *AcceptCallback;
	PVOID AcceptContext;
	PDEVICE_OBJECT DeviceObject;
	LONG Pending;
} RDMA_LISTEN_SOCKET;

typedef struct _RDMA_MESSAGE {
	ULONG Length;
	BOOLEAN Invalidated;
	UINT32 InvalidatedToken;
} RDMA_MESSAGE;

_IRQL_requires_(PASSIVE_LEVEL)
NTSTATUS RdmaStartup(_In_ IF_INDEX IfIndex);
_IRQL_requires_(PASSIVE_LEVEL)
VOID RdmaCleanup(void);
const NDK_ADAPTER_INFO *RdmaAdapterInfo(void);
_IRQL_requires_max_(DISPATCH_LEVEL)
NTSTATUS RdmaCountAdapterPages(_In_ PMDL Mdl, _In_ SIZE_T Length,
			       _Out_ ULONG *Pages, _Out_ ULONG *Fbo);

_IRQL_requires_(PASSIVE_LEVEL)
NTSTATUS RdmaCreateSocket(_Outptr_ RDMA_SOCKET **oSocket);
_IRQL_requires_(PASSIVE_LEVEL)
VOID RdmaCloseSocket(_In_ _Frees_ptr_ RDMA_SOCKET *Socket);

_IRQL_requires_(PASSIVE_LEVEL)
NTSTATUS RdmaCreateListenSocket(_In_ PDEVICE_OBJECT DeviceObject,
				_In_ RDMA_ACCEPT_CALLBACK *AcceptCallback,
				_In_opt_ PVOID AcceptContext,
				_Outptr_ RDMA_LISTEN_SOCKET **oListen);
_IRQL_requires_(PASSIVE_LEVEL)
NTSTATUS RdmaListen(_In_ RDMA_LISTEN_SOCKET *Listen, _In_ SOCKADDR *Address);
_IRQL_requires_(PASSIVE_LEVEL)
VOID RdmaCloseListenSocket(_In_ _Frees_ptr_ RDMA_LISTEN_SOCKET *Listen);

_IRQL_requires_(PASSIVE_LEVEL)
NTSTATUS RdmaConnect(_In_ RDMA_SOCKET *Socket, _In_ SOCKADDR *Local,
		     _In_ SOCKADDR *Remote);
_IRQL_requires_(PASSIVE_LEVEL)
NTSTATUS RdmaDisconnect(_In_ RDMA_SOCKET *Socket);

_IRQL_requires_max_(DISPATCH_LEVEL)
NTSTATUS RdmaPostSend(_In_ RDMA_SOCKET *Socket, _Inout_ RDMA_SEND *Send,
		      _In_reads_bytes_(Length) PVOID Buffer,
		      _In_ ULONG Length, _In_ ULONG Flags,
		      _In_ UINT32 InvalidateToken);
_IRQL_requires_(PASSIVE_LEVEL)
NTSTATUS RdmaWaitSend(_Inout_ RDMA_SEND *Send);
_IRQL_requires_(PASSIVE_LEVEL)
NTSTATUS RdmaReceive(_In_ RDMA_SOCKET *Socket,
		     _Out_writes_bytes_(Length) PVOID Buffer,
		     _In_ ULONG Length, _Out_ RDMA_MESSAGE *Message);

_IRQL_requires_(PASSIVE_LEVEL)
NTSTATUS RdmaRegisterBuffer(_In_ RDMA_SOCKET *Socket, _In_ PVOID Buffer,
			    _In_ ULONG Length, _In_ ULONG Flags,
			    _Outptr_ RDMA_REGISTERED_BUFFER **oBuffer);
_IRQL_requires_(PASSIVE_LEVEL)
VOID RdmaDeregisterBuffer(_In_ RDMA_SOCKET *Socket,
			  _In_ _Frees_ptr_ RDMA_REGISTERED_BUFFER *Buffer,
			  _In_ BOOLEAN Invalidate);

_IRQL_requires_(PASSIVE_LEVEL)
NTSTATUS RdmaRead(_In_ RDMA_SOCKET *Socket,
		  _In_ RDMA_REGISTERED_BUFFER *Local, _In_ UINT64 RemoteAddress,
		  _In_ UINT32 RemoteToken, _In_ ULONG Length);
_IRQL_requires_(PASSIVE_LEVEL)
NTSTATUS RdmaWrite(_In_ RDMA_SOCKET *Socket,
		   _In_ RDMA_REGISTERED_BUFFER *Local, _In_ UINT64 RemoteAddress,
		   _In_ UINT32 RemoteToken, _In_ ULONG Length);

#endif /* RDMA_SOCK_H */
