// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * RdmaSock: connection setup, message passing and RDMA on NDKPI, in the
 * Windows driver style. Object creation and teardown wait on KEVENTs at
 * PASSIVE_LEVEL; every work request completes through the CQ
 * notification callback at DISPATCH_LEVEL, which polls with
 * NdkGetCqResultsEx and signals the request's event.
 */
#include "RdmaSock.h"

/* Waits on the provider's own work are bounded: 10 s. */
#define RDMA_TIMEOUT_100NS	(-10LL * 1000 * 1000 * 10)

static WSK_REGISTRATION RdmaWskRegistration;
static WSK_PROVIDER_NPI RdmaWskProvider;
static WSK_PROVIDER_NDK_DISPATCH RdmaNdkDispatch;
static BOOLEAN RdmaWskRegistered;
static BOOLEAN RdmaWskCaptured;
static NDK_ADAPTER *RdmaAdapter;
static NDK_ADAPTER_INFO RdmaInfo;

static const WSK_CLIENT_DISPATCH RdmaWskClientDispatch = {
	MAKE_WSK_VERSION(1, 0), 0, NULL
};

/* An NDK request made synchronous. */
typedef struct _RDMA_ASYNC {
	KEVENT Event;
	NTSTATUS Status;
	NDK_OBJECT_HEADER *Object;
} RDMA_ASYNC;

static VOID RdmaAsyncInit(RDMA_ASYNC *Async)
{
	KeInitializeEvent(&Async->Event, NotificationEvent, FALSE);
	Async->Status = STATUS_PENDING;
	Async->Object = NULL;
}

static VOID RdmaCreateDone(PVOID Context, NTSTATUS Status,
			   NDK_OBJECT_HEADER *Object)
{
	RDMA_ASYNC *Async = Context;

	Async->Status = Status;
	Async->Object = Object;
	KeSetEvent(&Async->Event, IO_NO_INCREMENT, FALSE);
}

static VOID RdmaRequestDone(PVOID Context, NTSTATUS Status)
{
	RDMA_ASYNC *Async = Context;

	Async->Status = Status;
	KeSetEvent(&Async->Event, IO_NO_INCREMENT, FALSE);
}

static VOID RdmaCloseDone(PVOID Context)
{
	RDMA_ASYNC *Async = Context;

	Async->Status = STATUS_SUCCESS;
	KeSetEvent(&Async->Event, IO_NO_INCREMENT, FALSE);
}

/* Wait for a request that returned Status; a bounded wait. */
static NTSTATUS RdmaAsyncWait(RDMA_ASYNC *Async, NTSTATUS Status)
{
	LARGE_INTEGER Timeout;

	if (Status != STATUS_PENDING)
		return Status;
	Timeout.QuadPart = RDMA_TIMEOUT_100NS;
	if (KeWaitForSingleObject(&Async->Event, Executive, KernelMode, FALSE,
				  &Timeout) == STATUS_TIMEOUT)
		return STATUS_IO_TIMEOUT;
	return Async->Status;
}

static VOID RdmaCloseIgnored(PVOID Context)
{
	UNREFERENCED_PARAMETER(Context);
}

static VOID RdmaClose(NDK_OBJECT_HEADER *Object, NDK_FN_CLOSE_OBJECT Close)
{
	RDMA_ASYNC Async;

	RdmaAsyncInit(&Async);
	/* A close always completes: wait for it, however long. */
	if (Close(Object, RdmaCloseDone, &Async) == STATUS_PENDING)
		KeWaitForSingleObject(&Async.Event, Executive, KernelMode,
				      FALSE, NULL);
}

_Use_decl_annotations_
NTSTATUS RdmaStartup(IF_INDEX IfIndex)
{
	NDK_VERSION Version = { 1, 2 };
	WSK_CLIENT_NPI ClientNpi;
	ULONG Size = sizeof(RdmaInfo);
	NTSTATUS Status;

	PAGED_CODE();

	ClientNpi.ClientContext = NULL;
	ClientNpi.Dispatch = &RdmaWskClientDispatch;
	Status = WskRegister(&ClientNpi, &RdmaWskRegistration);
	if (!NT_SUCCESS(Status))
		goto exit;
	RdmaWskRegistered = TRUE;

	Status = WskCaptureProviderNPI(&RdmaWskRegistration, WSK_INFINITE_WAIT,
				       &RdmaWskProvider);
	if (!NT_SUCCESS(Status))
		goto exit;
	RdmaWskCaptured = TRUE;

	Status = RdmaWskProvider.Dispatch->WskControlClient(RdmaWskProvider.Client,
							    WSKNDK_GET_WSK_PROVIDER_NDK_DISPATCH,
							    0, NULL,
							    sizeof(RdmaNdkDispatch),
							    &RdmaNdkDispatch,
							    NULL, NULL);
	if (!NT_SUCCESS(Status))
		goto exit;

	Status = RdmaNdkDispatch.WskOpenNdkAdapter(RdmaWskProvider.Client,
						   Version, IfIndex,
						   &RdmaAdapter);
	if (!NT_SUCCESS(Status))
		goto exit;

	Status = RdmaAdapter->Dispatch->NdkQueryAdapterInfo(RdmaAdapter,
							    &RdmaInfo, &Size);
exit:
	if (!NT_SUCCESS(Status))
		RdmaCleanup();
	return Status;
}

_Use_decl_annotations_
VOID RdmaCleanup(void)
{
	PAGED_CODE();

	if (RdmaAdapter) {
		RdmaNdkDispatch.WskCloseNdkAdapter(RdmaWskProvider.Client,
						   RdmaAdapter);
		RdmaAdapter = NULL;
	}
	if (RdmaWskCaptured) {
		WskReleaseProviderNPI(&RdmaWskRegistration);
		RdmaWskCaptured = FALSE;
	}
	if (RdmaWskRegistered) {
		WskDeregister(&RdmaWskRegistration);
		RdmaWskRegistered = FALSE;
	}
}

const NDK_ADAPTER_INFO *RdmaAdapterInfo(void)
{
	return &RdmaInfo;
}

/* How many adapter pages a LAM of the MDL (chain) takes. */
_Use_decl_annotations_
NTSTATUS RdmaCountAdapterPages(PMDL Mdl, SIZE_T Length, ULONG *Pages,
			       ULONG *Fbo)
{
	NDK_LOGICAL_ADDRESS_MAPPING *Lam;
	ULONG LamSize = 0;
	RDMA_ASYNC Async;
	NTSTATUS Status;

	RdmaAsyncInit(&Async);
	Status = RdmaAdapter->Dispatch->NdkBuildLAM(RdmaAdapter, Mdl, Length,
						    RdmaRequestDone, &Async,
						    NULL, &LamSize, Fbo);
	if (Status != STATUS_BUFFER_TOO_SMALL)
		return NT_SUCCESS(Status) ? STATUS_INTERNAL_ERROR : Status;
	Lam = ExAllocatePool2(POOL_FLAG_NON_PAGED, LamSize, RDMA_POOL_TAG);
	if (!Lam)
		return STATUS_INSUFFICIENT_RESOURCES;
	/* NdkBuildLAM may pend on Windows; ndk completes it inline. */
	Status = RdmaAdapter->Dispatch->NdkBuildLAM(RdmaAdapter, Mdl, Length,
						    RdmaRequestDone, &Async,
						    Lam, &LamSize, Fbo);
	if (NT_SUCCESS(Status) && Status != STATUS_PENDING) {
		*Pages = Lam->AdapterPageCount;
		RdmaAdapter->Dispatch->NdkReleaseLAM(RdmaAdapter, Lam);
	} else if (NT_SUCCESS(Status)) {
		Status = STATUS_NOT_SUPPORTED;
	}
	ExFreePoolWithTag(Lam, RDMA_POOL_TAG);
	return Status;
}

/*
 * Describe Length bytes at Buffer by a LAM and the SGEs that cover it,
 * one per adapter page, for the privileged token.
 */
static NTSTATUS RdmaMapLamBuffer(RDMA_LAM_BUFFER *Data, PVOID Buffer,
				 ULONG Length, UINT32 Token)
{
	ULONG LamSize = 0, Offset, Done, Page;
	RDMA_ASYNC Async;
	NTSTATUS Status;

	Data->Buffer = Buffer;
	Data->Length = Length;
	Data->Mdl = IoAllocateMdl(Buffer, Length, FALSE, FALSE, NULL);
	if (!Data->Mdl)
		return STATUS_INSUFFICIENT_RESOURCES;
	MmBuildMdlForNonPagedPool(Data->Mdl);

	RdmaAsyncInit(&Async);
	Status = RdmaAdapter->Dispatch->NdkBuildLAM(RdmaAdapter, Data->Mdl,
						    Length, RdmaRequestDone,
						    &Async, NULL, &LamSize,
						    &Data->Fbo);
	if (Status != STATUS_BUFFER_TOO_SMALL)
		return NT_SUCCESS(Status) ? STATUS_INTERNAL_ERROR : Status;
	Data->Lam = ExAllocatePool2(POOL_FLAG_NON_PAGED, LamSize,
				    RDMA_POOL_TAG);
	if (!Data->Lam)
		return STATUS_INSUFFICIENT_RESOURCES;
	Status = RdmaAdapter->Dispatch->NdkBuildLAM(RdmaAdapter, Data->Mdl,
						    Length, RdmaRequestDone,
						    &Async, Data->Lam, &LamSize,
						    &Data->Fbo);
	Status = RdmaAsyncWait(&Async, Status);
	if (!NT_SUCCESS(Status)) {
		ExFreePoolWithTag(Data->Lam, RDMA_POOL_TAG);
		Data->Lam = NULL;
		return Status;
	}
	NT_ASSERT(Data->Fbo == BYTE_OFFSET(Buffer));

	Data->SgeCount = 0;
	for (Done = 0, Offset = Data->Fbo, Page = 0; Done < Length;
	     Page++, Offset = 0) {
		ULONG Chunk = min(Length - Done, (ULONG)PAGE_SIZE - Offset);

		if (Data->SgeCount == RDMA_MAX_SGE ||
		    Page >= Data->Lam->AdapterPageCount)
			return STATUS_INVALID_BUFFER_SIZE;
		Data->Sge[Data->SgeCount].LogicalAddress.QuadPart =
			Data->Lam->AdapterPageArray[Page].QuadPart + Offset;
		Data->Sge[Data->SgeCount].Length = Chunk;
		Data->Sge[Data->SgeCount].MemoryRegionToken = Token;
		Data->SgeCount++;
		Done += Chunk;
	}
	return STATUS_SUCCESS;
}

static VOID RdmaUnmapLamBuffer(RDMA_LAM_BUFFER *Data)
{
	if (Data->Lam) {
		RdmaAdapter->Dispatch->NdkReleaseLAM(RdmaAdapter, Data->Lam);
		ExFreePoolWithTag(Data->Lam, RDMA_POOL_TAG);
		Data->Lam = NULL;
	}
	if (Data->Mdl) {
		IoFreeMdl(Data->Mdl);
		Data->Mdl = NULL;
	}
}

static VOID RdmaOpInit(RDMA_OP *Op)
{
	KeInitializeEvent(&Op->Done, NotificationEvent, FALSE);
	Op->Status = STATUS_PENDING;
	Op->Bytes = 0;
}

static NTSTATUS RdmaOpWait(RDMA_OP *Op)
{
	LARGE_INTEGER Timeout;

	Timeout.QuadPart = RDMA_TIMEOUT_100NS;
	if (KeWaitForSingleObject(&Op->Done, Executive, KernelMode, FALSE,
				  &Timeout) == STATUS_TIMEOUT)
		return STATUS_IO_TIMEOUT;
	return Op->Status;
}

/* Complete every request the CQ holds. */
static VOID RdmaDrainCq(RDMA_SOCKET *Socket)
{
	const NDK_CQ_DISPATCH *Cq = Socket->Cq->Dispatch;
	NDK_RESULT_EX Results[8];
	ULONG Count, i;

	while ((Count = Cq->NdkGetCqResultsEx(Socket->Cq, Results,
					      ARRAYSIZE(Results))) != 0) {
		for (i = 0; i < Count; i++) {
			RDMA_OP *Op = Results[i].RequestContext;

			Op->Status = Results[i].Status;
			Op->Bytes = Results[i].BytesTransferred;
			Op->Type = Results[i].Type;
			Op->TypeSpecific = Results[i].TypeSpecificCompletionOutput;
			InterlockedIncrement(&Socket->Completions);
			KeSetEvent(&Op->Done, IO_NETWORK_INCREMENT, FALSE);
		}
	}
}

/* NDK_FN_CQ_NOTIFICATION_CALLBACK: runs at DISPATCH_LEVEL. */
static VOID RdmaCqNotification(PVOID Context, NTSTATUS CqStatus)
{
	RDMA_SOCKET *Socket = Context;
	KLOCK_QUEUE_HANDLE LockHandle;

	NT_ASSERT(KeGetCurrentIrql() == DISPATCH_LEVEL);
	if (!ExAcquireRundownProtection(&Socket->CqRundown))
		return;
	if (!NT_SUCCESS(CqStatus))
		InterlockedIncrement(&Socket->CqErrors);

	KeAcquireInStackQueuedSpinLock(&Socket->CqLock, &LockHandle);
	RdmaDrainCq(Socket);
	Socket->Cq->Dispatch->NdkArmCq(Socket->Cq, NDK_CQ_NOTIFY_ANY);
	/* Completions that arrived before the arm raise no notification. */
	RdmaDrainCq(Socket);
	KeReleaseInStackQueuedSpinLock(&LockHandle);

	ExReleaseRundownProtection(&Socket->CqRundown);
}

/* NDK_FN_DISCONNECT_EVENT_CALLBACK */
static VOID RdmaDisconnectEvent(PVOID Context)
{
	RDMA_SOCKET *Socket = Context;

	KeSetEvent(&Socket->PeerDisconnected, IO_NO_INCREMENT, FALSE);
}

static NTSTATUS RdmaPostReceive(RDMA_SOCKET *Socket, RDMA_RECV *Recv)
{
	RdmaOpInit(&Recv->Op);
	return Socket->Qp->Dispatch->NdkReceive(Socket->Qp, &Recv->Op,
						Recv->Data.Sge,
						Recv->Data.SgeCount);
}

_Use_decl_annotations_
NTSTATUS RdmaCreateSocket(RDMA_SOCKET **oSocket)
{
	RDMA_SOCKET *Socket;
	RDMA_ASYNC Async;
	NTSTATUS Status;
	ULONG i;

	PAGED_CODE();

	Socket = ExAllocatePool2(POOL_FLAG_NON_PAGED, sizeof(*Socket),
				 RDMA_POOL_TAG);
	if (!Socket)
		return STATUS_INSUFFICIENT_RESOURCES;
	KeInitializeSpinLock(&Socket->CqLock);
	KeInitializeSpinLock(&Socket->ListLock);
	ExInitializeRundownProtection(&Socket->CqRundown);
	InitializeListHead(&Socket->Registered);
	KeInitializeEvent(&Socket->PeerDisconnected, NotificationEvent, FALSE);

	RdmaAsyncInit(&Async);
	Status = RdmaAdapter->Dispatch->NdkCreatePd(RdmaAdapter, RdmaCreateDone,
						    &Async, &Socket->Pd);
	Status = RdmaAsyncWait(&Async, Status);
	if (Async.Object)
		Socket->Pd = CONTAINING_RECORD(Async.Object, NDK_PD, Header);
	if (!NT_SUCCESS(Status))
		goto exit;
	Socket->Pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(Socket->Pd,
								 &Socket->PrivilegedToken);

	RdmaAsyncInit(&Async);
	Status = RdmaAdapter->Dispatch->NdkCreateCq(RdmaAdapter,
						    2 * RDMA_QUEUE_DEPTH,
						    RdmaCqNotification, Socket,
						    NULL, RdmaCreateDone,
						    &Async, &Socket->Cq);
	Status = RdmaAsyncWait(&Async, Status);
	if (Async.Object)
		Socket->Cq = CONTAINING_RECORD(Async.Object, NDK_CQ, Header);
	if (!NT_SUCCESS(Status))
		goto exit;
	Socket->Cq->Dispatch->NdkArmCq(Socket->Cq, NDK_CQ_NOTIFY_ANY);

	RdmaAsyncInit(&Async);
	Status = Socket->Pd->Dispatch->NdkCreateQp(Socket->Pd, Socket->Cq,
						   Socket->Cq, Socket,
						   RDMA_QUEUE_DEPTH,
						   RDMA_QUEUE_DEPTH,
						   RDMA_MAX_SGE, RDMA_MAX_SGE,
						   0, RdmaCreateDone, &Async,
						   &Socket->Qp);
	Status = RdmaAsyncWait(&Async, Status);
	if (Async.Object)
		Socket->Qp = CONTAINING_RECORD(Async.Object, NDK_QP, Header);
	if (!NT_SUCCESS(Status))
		goto exit;

	RdmaAsyncInit(&Async);
	Status = RdmaAdapter->Dispatch->NdkCreateConnector(RdmaAdapter,
							   RdmaCreateDone,
							   &Async,
							   &Socket->Connector);
	Status = RdmaAsyncWait(&Async, Status);
	if (Async.Object)
		Socket->Connector = CONTAINING_RECORD(Async.Object,
						      NDK_CONNECTOR, Header);
	if (!NT_SUCCESS(Status))
		goto exit;

	/* Receives may be posted before the connection exists. */
	for (i = 0; i < RDMA_RECV_COUNT; i++) {
		PVOID Buffer = ExAllocatePool2(POOL_FLAG_NON_PAGED,
					       RDMA_MSG_SIZE, RDMA_POOL_TAG);

		if (!Buffer) {
			Status = STATUS_INSUFFICIENT_RESOURCES;
			goto exit;
		}
		Status = RdmaMapLamBuffer(&Socket->Recv[i].Data, Buffer,
					  RDMA_MSG_SIZE,
					  Socket->PrivilegedToken);
		if (!NT_SUCCESS(Status))
			goto exit;
		Status = RdmaPostReceive(Socket, &Socket->Recv[i]);
		if (!NT_SUCCESS(Status))
			goto exit;
	}

exit:
	if (!NT_SUCCESS(Status)) {
		RdmaCloseSocket(Socket);
		Socket = NULL;
	}
	*oSocket = Socket;
	return Status;
}

_Use_decl_annotations_
VOID RdmaCloseSocket(RDMA_SOCKET *Socket)
{
	KLOCK_QUEUE_HANDLE LockHandle;
	ULONG i;

	PAGED_CODE();

	while (TRUE) {
		RDMA_REGISTERED_BUFFER *Buffer;

		KeAcquireInStackQueuedSpinLock(&Socket->ListLock, &LockHandle);
		if (IsListEmpty(&Socket->Registered)) {
			KeReleaseInStackQueuedSpinLock(&LockHandle);
			break;
		}
		Buffer = CONTAINING_RECORD(Socket->Registered.Flink,
					   RDMA_REGISTERED_BUFFER, Link);
		KeReleaseInStackQueuedSpinLock(&LockHandle);
		RdmaDeregisterBuffer(Socket, Buffer, FALSE);
	}
	if (Socket->Connector)
		RdmaClose(&Socket->Connector->Header,
			  Socket->Connector->Dispatch->NdkCloseConnector);
	/* Closing the QP flushes the receives still posted. */
	if (Socket->Qp)
		RdmaClose(&Socket->Qp->Header, Socket->Qp->Dispatch->NdkCloseQp);
	ExWaitForRundownProtectionRelease(&Socket->CqRundown);
	if (Socket->Cq)
		RdmaClose(&Socket->Cq->Header, Socket->Cq->Dispatch->NdkCloseCq);
	for (i = 0; i < RDMA_RECV_COUNT; i++) {
		RdmaUnmapLamBuffer(&Socket->Recv[i].Data);
		if (Socket->Recv[i].Data.Buffer)
			ExFreePoolWithTag(Socket->Recv[i].Data.Buffer,
					  RDMA_POOL_TAG);
	}
	if (Socket->Pd)
		RdmaClose(&Socket->Pd->Header, Socket->Pd->Dispatch->NdkClosePd);
	ExFreePoolWithTag(Socket, RDMA_POOL_TAG);
}

_Use_decl_annotations_
NTSTATUS RdmaConnect(RDMA_SOCKET *Socket, SOCKADDR *Local, SOCKADDR *Remote)
{
	NDK_CONNECTOR *Connector = Socket->Connector;
	RDMA_ASYNC Async;
	NTSTATUS Status;

	PAGED_CODE();

	RdmaAsyncInit(&Async);
	Status = Connector->Dispatch->NdkConnect(Connector, Socket->Qp, Local,
						 sizeof(SOCKADDR_IN), Remote,
						 sizeof(SOCKADDR_IN),
						 RdmaInfo.MaxInboundReadLimit ? 1 : 0,
						 RdmaInfo.MaxOutboundReadLimit ? 1 : 0,
						 NULL, 0, RdmaRequestDone,
						 &Async);
	Status = RdmaAsyncWait(&Async, Status);
	if (!NT_SUCCESS(Status))
		return Status;

	RdmaAsyncInit(&Async);
	Status = Connector->Dispatch->NdkCompleteConnect(Connector,
							 RdmaDisconnectEvent,
							 Socket,
							 RdmaRequestDone,
							 &Async);
	Status = RdmaAsyncWait(&Async, Status);
	Socket->Connected = NT_SUCCESS(Status);
	return Status;
}

_Use_decl_annotations_
NTSTATUS RdmaDisconnect(RDMA_SOCKET *Socket)
{
	RDMA_ASYNC Async;
	NTSTATUS Status;

	PAGED_CODE();

	RdmaAsyncInit(&Async);
	Status = Socket->Connector->Dispatch->NdkDisconnect(Socket->Connector,
							    RdmaRequestDone,
							    &Async);
	Socket->Connected = FALSE;
	return RdmaAsyncWait(&Async, Status);
}

/* The accept of one incoming connection, at PASSIVE_LEVEL. */
typedef struct _RDMA_ACCEPT_WORK {
	PIO_WORKITEM WorkItem;
	RDMA_LISTEN_SOCKET *Listen;
	NDK_CONNECTOR *Incoming;
} RDMA_ACCEPT_WORK;

static VOID RdmaAcceptWorker(PDEVICE_OBJECT DeviceObject, PVOID Context)
{
	RDMA_ACCEPT_WORK *Work = Context;
	RDMA_LISTEN_SOCKET *Listen = Work->Listen;
	RDMA_SOCKET *Socket = NULL;
	RDMA_ASYNC Async;
	NTSTATUS Status;

	UNREFERENCED_PARAMETER(DeviceObject);
	NT_ASSERT(KeGetCurrentIrql() == PASSIVE_LEVEL);

	Status = RdmaCreateSocket(&Socket);
	if (!NT_SUCCESS(Status)) {
		RdmaClose(&Work->Incoming->Header,
			  Work->Incoming->Dispatch->NdkCloseConnector);
		goto exit;
	}
	/* The socket takes the connector the listener handed over. */
	RdmaClose(&Socket->Connector->Header,
		  Socket->Connector->Dispatch->NdkCloseConnector);
	Socket->Connector = Work->Incoming;

	RdmaAsyncInit(&Async);
	Status = Socket->Connector->Dispatch->NdkAccept(Socket->Connector,
							Socket->Qp,
							RdmaInfo.MaxInboundReadLimit ? 1 : 0,
							RdmaInfo.MaxOutboundReadLimit ? 1 : 0,
							NULL, 0,
							RdmaDisconnectEvent,
							Socket,
							RdmaRequestDone,
							&Async);
	Status = RdmaAsyncWait(&Async, Status);
	Socket->Connected = NT_SUCCESS(Status);
	if (!NT_SUCCESS(Status)) {
		RdmaCloseSocket(Socket);
		Socket = NULL;
	}
exit:
	Listen->AcceptCallback(Listen->AcceptContext, Socket, Status);
	IoFreeWorkItem(Work->WorkItem);
	ExFreePoolWithTag(Work, RDMA_POOL_TAG);
	InterlockedDecrement(&Listen->Pending);
}

/* NDK_FN_CONNECT_EVENT_CALLBACK: hand the connection to a work item. */
static VOID RdmaConnectEvent(PVOID Context, NDK_CONNECTOR *Connector)
{
	RDMA_LISTEN_SOCKET *Listen = Context;
	RDMA_ACCEPT_WORK *Work;

	Work = ExAllocatePool2(POOL_FLAG_NON_PAGED, sizeof(*Work),
			       RDMA_POOL_TAG);
	if (Work)
		Work->WorkItem = IoAllocateWorkItem(Listen->DeviceObject);
	if (!Work || !Work->WorkItem) {
		if (Work)
			ExFreePoolWithTag(Work, RDMA_POOL_TAG);
		Connector->Dispatch->NdkReject(Connector, NULL, 0);
		Connector->Dispatch->NdkCloseConnector(&Connector->Header,
						       RdmaCloseIgnored, NULL);
		return;
	}
	Work->Listen = Listen;
	Work->Incoming = Connector;
	InterlockedIncrement(&Listen->Pending);
	IoQueueWorkItem(Work->WorkItem, RdmaAcceptWorker, DelayedWorkQueue,
			Work);
}

_Use_decl_annotations_
NTSTATUS RdmaCreateListenSocket(PDEVICE_OBJECT DeviceObject,
				RDMA_ACCEPT_CALLBACK *AcceptCallback,
				PVOID AcceptContext,
				RDMA_LISTEN_SOCKET **oListen)
{
	RDMA_LISTEN_SOCKET *Listen;
	RDMA_ASYNC Async;
	NTSTATUS Status;

	PAGED_CODE();

	Listen = ExAllocatePool2(POOL_FLAG_NON_PAGED, sizeof(*Listen),
				 RDMA_POOL_TAG);
	if (!Listen)
		return STATUS_INSUFFICIENT_RESOURCES;
	Listen->DeviceObject = DeviceObject;
	Listen->AcceptCallback = AcceptCallback;
	Listen->AcceptContext = AcceptContext;

	RdmaAsyncInit(&Async);
	Status = RdmaAdapter->Dispatch->NdkCreateListener(RdmaAdapter,
							  RdmaConnectEvent,
							  Listen,
							  RdmaCreateDone,
							  &Async,
							  &Listen->Listener);
	Status = RdmaAsyncWait(&Async, Status);
	if (Async.Object)
		Listen->Listener = CONTAINING_RECORD(Async.Object,
						     NDK_LISTENER, Header);
	if (!NT_SUCCESS(Status)) {
		RdmaCloseListenSocket(Listen);
		Listen = NULL;
	}
	*oListen = Listen;
	return Status;
}

_Use_decl_annotations_
NTSTATUS RdmaListen(RDMA_LISTEN_SOCKET *Listen, SOCKADDR *Address)
{
	RDMA_ASYNC Async;

	PAGED_CODE();

	RdmaAsyncInit(&Async);
	return RdmaAsyncWait(&Async,
			     Listen->Listener->Dispatch->NdkListen(Listen->Listener,
								   Address,
								   sizeof(SOCKADDR_IN),
								   RdmaRequestDone,
								   &Async));
}

_Use_decl_annotations_
VOID RdmaCloseListenSocket(RDMA_LISTEN_SOCKET *Listen)
{
	PAGED_CODE();

	if (Listen->Listener)
		RdmaClose(&Listen->Listener->Header,
			  Listen->Listener->Dispatch->NdkCloseListener);
	/* No connect event can come now; let queued accepts finish. */
	while (InterlockedCompareExchange(&Listen->Pending, 0, 0)) {
		LARGE_INTEGER Delay;

		Delay.QuadPart = -10 * 1000 * 10;	/* 10 ms */
		KeDelayExecutionThread(KernelMode, FALSE, &Delay);
	}
	ExFreePoolWithTag(Listen, RDMA_POOL_TAG);
}

_Use_decl_annotations_
NTSTATUS RdmaPostSend(RDMA_SOCKET *Socket, RDMA_SEND *Send, PVOID Buffer,
		      ULONG Length, ULONG Flags, UINT32 InvalidateToken)
{
	NTSTATUS Status;

	RdmaOpInit(&Send->Op);
	RtlZeroMemory(&Send->Data, sizeof(Send->Data));
	Status = RdmaMapLamBuffer(&Send->Data, Buffer, Length,
				  Socket->PrivilegedToken);
	if (!NT_SUCCESS(Status)) {
		RdmaUnmapLamBuffer(&Send->Data);
		return Status;
	}
	if (InvalidateToken)
		Status = Socket->Qp->Dispatch->NdkSendAndInvalidate(Socket->Qp,
								    &Send->Op,
								    Send->Data.Sge,
								    Send->Data.SgeCount,
								    Flags,
								    InvalidateToken);
	else
		Status = Socket->Qp->Dispatch->NdkSend(Socket->Qp, &Send->Op,
						       Send->Data.Sge,
						       Send->Data.SgeCount,
						       Flags);
	if (!NT_SUCCESS(Status))
		RdmaUnmapLamBuffer(&Send->Data);
	return Status;
}

_Use_decl_annotations_
NTSTATUS RdmaWaitSend(RDMA_SEND *Send)
{
	NTSTATUS Status = RdmaOpWait(&Send->Op);

	/* The LAM stays mapped until the device is done with it. */
	if (Status != STATUS_IO_TIMEOUT)
		RdmaUnmapLamBuffer(&Send->Data);
	return Status;
}

_Use_decl_annotations_
NTSTATUS RdmaReceive(RDMA_SOCKET *Socket, PVOID Buffer, ULONG Length,
		     RDMA_MESSAGE *Message)
{
	RDMA_RECV *Recv = &Socket->Recv[Socket->NextRecv];
	NTSTATUS Status;

	PAGED_CODE();

	Status = RdmaOpWait(&Recv->Op);
	if (!NT_SUCCESS(Status))
		return Status;
	Message->Length = Recv->Op.Bytes;
	Message->Invalidated =
		Recv->Op.Type == NdkOperationTypeReceiveAndInvalidate;
	Message->InvalidatedToken = Message->Invalidated ?
				    (UINT32)Recv->Op.TypeSpecific : 0;
	if (Message->Length > Length)
		return STATUS_BUFFER_OVERFLOW;
	RtlCopyMemory(Buffer, Recv->Data.Buffer, Message->Length);
	Socket->NextRecv = (Socket->NextRecv + 1) % RDMA_RECV_COUNT;
	return RdmaPostReceive(Socket, Recv);
}

_Use_decl_annotations_
NTSTATUS RdmaRegisterBuffer(RDMA_SOCKET *Socket, PVOID Buffer, ULONG Length,
			    ULONG Flags, RDMA_REGISTERED_BUFFER **oBuffer)
{
	RDMA_REGISTERED_BUFFER *Reg;
	KLOCK_QUEUE_HANDLE LockHandle;
	ULONG LamSize = 0, Fbo;
	RDMA_ASYNC Async;
	NTSTATUS Status;
	RDMA_OP Op;

	PAGED_CODE();

	*oBuffer = NULL;
	Reg = ExAllocatePool2(POOL_FLAG_NON_PAGED, sizeof(*Reg),
			      RDMA_POOL_TAG);
	if (!Reg)
		return STATUS_INSUFFICIENT_RESOURCES;
	InitializeListHead(&Reg->Link);
	Reg->Length = Length;

	Reg->Mdl = IoAllocateMdl(Buffer, Length, FALSE, FALSE, NULL);
	if (!Reg->Mdl) {
		Status = STATUS_INSUFFICIENT_RESOURCES;
		goto exit;
	}
	MmBuildMdlForNonPagedPool(Reg->Mdl);
	Reg->BaseVirtualAddress = MmGetMdlVirtualAddress(Reg->Mdl);

	RdmaAsyncInit(&Async);
	Status = RdmaAdapter->Dispatch->NdkBuildLAM(RdmaAdapter, Reg->Mdl,
						    Length, RdmaRequestDone,
						    &Async, NULL, &LamSize,
						    &Fbo);
	if (Status != STATUS_BUFFER_TOO_SMALL)
		goto exit;
	Reg->Lam = ExAllocatePool2(POOL_FLAG_NON_PAGED, LamSize,
				   RDMA_POOL_TAG);
	if (!Reg->Lam) {
		Status = STATUS_INSUFFICIENT_RESOURCES;
		goto exit;
	}
	Status = RdmaAsyncWait(&Async,
			       RdmaAdapter->Dispatch->NdkBuildLAM(RdmaAdapter,
								  Reg->Mdl,
								  Length,
								  RdmaRequestDone,
								  &Async,
								  Reg->Lam,
								  &LamSize,
								  &Fbo));
	if (!NT_SUCCESS(Status))
		goto exit;

	RdmaAsyncInit(&Async);
	Status = Socket->Pd->Dispatch->NdkCreateMr(Socket->Pd, TRUE,
						   RdmaCreateDone, &Async,
						   &Reg->Mr);
	Status = RdmaAsyncWait(&Async, Status);
	if (Async.Object)
		Reg->Mr = CONTAINING_RECORD(Async.Object, NDK_MR, Header);
	if (!NT_SUCCESS(Status))
		goto exit;

	RdmaAsyncInit(&Async);
	Status = Reg->Mr->Dispatch->NdkInitializeFastRegisterMr(Reg->Mr,
								 Reg->Lam->AdapterPageCount,
								 TRUE,
								 RdmaRequestDone,
								 &Async);
	Status = RdmaAsyncWait(&Async, Status);
	if (!NT_SUCCESS(Status))
		goto exit;

	RdmaOpInit(&Op);
	Status = Socket->Qp->Dispatch->NdkFastRegister(Socket->Qp, &Op, Reg->Mr,
						       Reg->Lam->AdapterPageCount,
						       Reg->Lam->AdapterPageArray,
						       Fbo, Length,
						       Reg->BaseVirtualAddress,
						       Flags);
	if (NT_SUCCESS(Status))
		Status = RdmaOpWait(&Op);
	if (NT_SUCCESS(Status) && Op.Type != NdkOperationTypeFastRegister)
		Status = STATUS_INTERNAL_ERROR;
	if (!NT_SUCCESS(Status))
		goto exit;

	Reg->RemoteToken = Reg->Mr->Dispatch->NdkGetRemoteTokenFromMr(Reg->Mr);
	Reg->LocalToken = Reg->Mr->Dispatch->NdkGetLocalTokenFromMr(Reg->Mr);
	KeAcquireInStackQueuedSpinLock(&Socket->ListLock, &LockHandle);
	InsertTailList(&Socket->Registered, &Reg->Link);
	KeReleaseInStackQueuedSpinLock(&LockHandle);
	*oBuffer = Reg;
	return STATUS_SUCCESS;

exit:
	if (NT_SUCCESS(Status))
		Status = STATUS_INTERNAL_ERROR;
	RdmaDeregisterBuffer(Socket, Reg, FALSE);
	return Status;
}

_Use_decl_annotations_
VOID RdmaDeregisterBuffer(RDMA_SOCKET *Socket, RDMA_REGISTERED_BUFFER *Reg,
			  BOOLEAN Invalidate)
{
	KLOCK_QUEUE_HANDLE LockHandle;
	RDMA_OP Op;

	PAGED_CODE();

	KeAcquireInStackQueuedSpinLock(&Socket->ListLock, &LockHandle);
	RemoveEntryList(&Reg->Link);
	KeReleaseInStackQueuedSpinLock(&LockHandle);

	if (Invalidate && Reg->Mr && Socket->Connected) {
		RdmaOpInit(&Op);
		if (NT_SUCCESS(Socket->Qp->Dispatch->NdkInvalidate(Socket->Qp,
								   &Op,
								   &Reg->Mr->Header,
								   0)))
			RdmaOpWait(&Op);
	}
	if (Reg->Mr)
		RdmaClose(&Reg->Mr->Header, Reg->Mr->Dispatch->NdkCloseMr);
	if (Reg->Lam) {
		RdmaAdapter->Dispatch->NdkReleaseLAM(RdmaAdapter, Reg->Lam);
		ExFreePoolWithTag(Reg->Lam, RDMA_POOL_TAG);
	}
	if (Reg->Mdl)
		IoFreeMdl(Reg->Mdl);
	ExFreePoolWithTag(Reg, RDMA_POOL_TAG);
}

static NTSTATUS RdmaReadWrite(RDMA_SOCKET *Socket,
			      RDMA_REGISTERED_BUFFER *Local,
			      UINT64 RemoteAddress, UINT32 RemoteToken,
			      ULONG Length, BOOLEAN Read)
{
	NDK_SGE Sge;
	NTSTATUS Status;
	RDMA_OP Op;

	PAGED_CODE();

	if (Length > Local->Length)
		return STATUS_INVALID_PARAMETER;
	Sge.VirtualAddress = Local->BaseVirtualAddress;
	Sge.Length = Length;
	Sge.MemoryRegionToken = Local->LocalToken;
	RdmaOpInit(&Op);
	if (Read)
		Status = Socket->Qp->Dispatch->NdkRead(Socket->Qp, &Op, &Sge, 1,
						       RemoteAddress,
						       RemoteToken, 0);
	else
		Status = Socket->Qp->Dispatch->NdkWrite(Socket->Qp, &Op, &Sge, 1,
							RemoteAddress,
							RemoteToken, 0);
	if (!NT_SUCCESS(Status))
		return Status;
	Status = RdmaOpWait(&Op);
	if (NT_SUCCESS(Status) &&
	    Op.Type != (Read ? NdkOperationTypeRead : NdkOperationTypeWrite))
		Status = STATUS_INTERNAL_ERROR;
	return Status;
}

_Use_decl_annotations_
NTSTATUS RdmaRead(RDMA_SOCKET *Socket, RDMA_REGISTERED_BUFFER *Local,
		  UINT64 RemoteAddress, UINT32 RemoteToken, ULONG Length)
{
	return RdmaReadWrite(Socket, Local, RemoteAddress, RemoteToken, Length,
			     TRUE);
}

_Use_decl_annotations_
NTSTATUS RdmaWrite(RDMA_SOCKET *Socket, RDMA_REGISTERED_BUFFER *Local,
		   UINT64 RemoteAddress, UINT32 RemoteToken, ULONG Length)
{
	return RdmaReadWrite(Socket, Local, RemoteAddress, RemoteToken, Length,
			     FALSE);
}
