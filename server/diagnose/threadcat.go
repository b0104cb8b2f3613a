package diagnose

import "strings"

// The catalogue of the ways a user's function comes to run on another
// thread: the standard library's threads, pools and async bridges, and
// the frameworks that call user code from their own threads. threads.go
// reads it; every entry has a firing case and a near miss in
// testdata/cases/tl001_thread_catalogue.txtar (<id>.py, <id>_quiet.py),
// which TestThreadCatalogue holds it to.
//
// Not entries, on purpose: torch.utils.data.DataLoader's workers are
// processes, not threads (worker_init_fn, collate_fn and the dataset run
// in them, each with its own CUDA state, or none); tkinter runs every
// callback on the thread of its mainloop. Process pools are not threads.

// entryKind is how a file reaches an entry, and so which code reads it.
type entryKind uint8

const (
	// entryCall: a call of one of quals runs the callable it is given.
	entryCall entryKind = iota
	// entryPool: quals make thread pools; their methods run their first
	// argument in the pool, and kws (initializer=) in every worker.
	entryPool
	// entryLoopExecutor: loop.run_in_executor(pool or None, fn).
	entryLoopExecutor
	// entryBackward: autograd's backward threads run the callable again.
	entryBackward
	// entryMethod: a method of an instance of one of on (any receiver
	// when on is empty) runs the callable it is given.
	entryMethod
	// entryDecorator: @x.method(...) on a def, x an instance of one of
	// on, runs the decorated function.
	entryDecorator
	// entrySubclass: methods of a class deriving from one of quals run
	// on the thread.
	entrySubclass
	// entryDecorated: a def decorated with one of quals (bare or
	// called) runs on a thread, and what it returns is used on others.
	entryDecorated
	// entryServicer: a generated add_*Servicer_to_server(servicer,
	// server), server an instance of one of on, runs the servicer's
	// methods.
	entryServicer
)

// threadEntry is one way a thread is entered.
type threadEntry struct {
	id   string // names the entry and its cases
	kind entryKind
	// quals are, for entryCall, entryPool and entryBackward, what the file
	// calls; for entrySubclass, the base classes; for entryDecorated, the
	// decorators.
	quals []string
	// on are the types whose instances' methods lead to the entry (a
	// name ending in "." stands for every name under it); an instance is
	// a name bound to a call of one, a parameter annotated with one, a
	// call of one, or of a class of the file that derives from one.
	on []string
	// methods are what the file calls (entryMethod, entryDecorator,
	// entryPool) or what runs on the thread (entrySubclass).
	methods []string
	mapping []string // entryPool: the methods that run the callable over several inputs at once
	prefix  string   // entrySubclass: methods whose names start with it run too (do_GET, do_POST, …)
	arg     int      // where the callable is passed, -1 for by keyword only (a pool's initializer=)
	kws     []string // the keywords it may be passed by (entrySubclass: to the base's __init__)
	// instance, when the callable is an instance of a class of the file
	// (Greeter(), or a name bound to one once), names the methods that
	// run; "*" is every method not starting with "_".
	instance []string
	// signal: the method is called on this signal of the instance
	// (thread.started.connect(slot)).
	signal string
	// iterates: the argument is an iterable the framework iterates on
	// the thread: a generator a call of the buffer's function makes, or
	// a generator expression.
	iterates bool
	// served: the class runs on a thread only when it is handed to a
	// threading server (threadingServers, or a class of the file that
	// derives from socketserver.ThreadingMixIn).
	served bool
	// syncOnly: only a plain def goes to the thread; an async def is
	// awaited on the event loop's thread.
	syncOnly bool
	many     bool // runs its callable in several threads at once
	// offKw names the keyword of x.run(…) that, given False, serves one
	// request at a time on the calling thread (Flask's threaded=False).
	offKw string
	// how is what the message says entered the thread; "" for the name
	// of what the file calls.
	how string
	ref string // where the framework documents or implements it
}

// qtCore names a QtCore class under each Qt binding.
func qtCore(name string) []string {
	var out []string
	for _, b := range []string{"PyQt5", "PyQt6", "PySide2", "PySide6", "qtpy"} {
		out = append(out, b+".QtCore."+name)
	}
	return out
}

var (
	fastapiApps  = []string{"fastapi.FastAPI", "fastapi.applications.FastAPI", "fastapi.APIRouter", "fastapi.routing.APIRouter"}
	flaskApps    = []string{"flask.Flask", "flask.app.Flask", "flask.Blueprint", "flask.blueprints.Blueprint"}
	threadMixins = []string{"socketserver.ThreadingMixIn"}
)

// threadingServers run each request's handler on a thread of its own.
var threadingServers = []string{
	"socketserver.ThreadingTCPServer", "socketserver.ThreadingUDPServer",
	"socketserver.ThreadingUnixStreamServer", "socketserver.ThreadingUnixDatagramServer",
	"http.server.ThreadingHTTPServer",
}

// threadCatalogue is every way a thread is entered that the checks know.
var threadCatalogue = []threadEntry{
	// The standard library.
	{id: "threading-thread", kind: entryCall, quals: []string{"threading.Thread"}, arg: 1, kws: []string{"target"},
		ref: "https://docs.python.org/3/library/threading.html#threading.Thread (target is invoked by run() on the new thread)"},
	{id: "threading-timer", kind: entryCall, quals: []string{"threading.Timer"}, arg: 1, kws: []string{"function", "target"},
		ref: "https://docs.python.org/3/library/threading.html#timer-objects"},
	{id: "threading-subclass", kind: entrySubclass, quals: []string{"threading.Thread"}, methods: []string{"run"},
		kws: []string{"target"}, // super().__init__(target=self.loop)
		how: "threading.Thread subclass",
		ref: "https://docs.python.org/3/library/threading.html#thread-objects (override run(); start() calls it on the new thread)"},
	{id: "thread-start-new", kind: entryCall, quals: []string{"_thread.start_new_thread"}, arg: 0,
		ref: "https://docs.python.org/3/library/_thread.html#thread.start_new_thread"},
	{id: "concurrent-futures", kind: entryPool,
		quals:   []string{"concurrent.futures.ThreadPoolExecutor", "concurrent.futures.thread.ThreadPoolExecutor"},
		methods: []string{"submit", "map"}, mapping: []string{"map"}, arg: -1, kws: []string{"initializer"},
		ref: "https://docs.python.org/3/library/concurrent.futures.html#threadpoolexecutor"},
	{id: "multiprocessing-threadpool", kind: entryPool,
		quals:   []string{"multiprocessing.pool.ThreadPool", "multiprocessing.dummy.Pool"},
		methods: []string{"apply", "apply_async", "map", "map_async", "imap", "imap_unordered", "starmap", "starmap_async"},
		mapping: []string{"map", "map_async", "imap", "imap_unordered", "starmap", "starmap_async"}, arg: -1, kws: []string{"initializer"},
		ref: "https://docs.python.org/3/library/multiprocessing.html#multiprocessing.pool.ThreadPool"},
	{id: "asyncio-to-thread", kind: entryCall, quals: []string{"asyncio.to_thread"}, arg: 0,
		ref: "https://docs.python.org/3/library/asyncio-task.html#asyncio.to_thread"},
	{id: "run-in-executor", kind: entryLoopExecutor, methods: []string{"run_in_executor"}, arg: 1,
		how: "run_in_executor",
		ref: "https://docs.python.org/3/library/asyncio-eventloop.html#asyncio.loop.run_in_executor (None: the loop's default ThreadPoolExecutor)"},
	{id: "anyio-run-sync", kind: entryCall, quals: []string{"anyio.to_thread.run_sync"}, arg: 0,
		ref: "https://anyio.readthedocs.io/en/stable/threads.html (to_thread.run_sync: a worker thread)"},
	{id: "run-in-threadpool", kind: entryCall,
		quals: []string{"starlette.concurrency.run_in_threadpool", "fastapi.concurrency.run_in_threadpool"}, arg: 0,
		ref: "starlette/concurrency.py run_in_threadpool (anyio.to_thread.run_sync)"},
	{id: "checkpoint-backward", kind: entryBackward, quals: []string{"torch.utils.checkpoint.checkpoint"}, arg: 0,
		how: "autograd's backward (torch.utils.checkpoint runs it again there)",
		ref: "torch/utils/checkpoint.py checkpoint (the function runs again in backward, on autograd's device threads: torch/csrc/autograd/engine.cpp Engine::thread_init)"},

	// Web frameworks: synchronous handlers run on a pool or a thread per
	// request; async ones on the event loop.
	{id: "fastapi-route", kind: entryDecorator, on: fastapiApps,
		methods:  []string{"get", "post", "put", "delete", "patch", "options", "head", "trace", "api_route"},
		syncOnly: true, many: true,
		how: "FastAPI runs this plain def endpoint in its thread pool",
		ref: "https://fastapi.tiangolo.com/async/#path-operation-functions; fastapi/routing.py run_endpoint_function (run_in_threadpool unless is_coroutine)"},
	{id: "fastapi-add-api-route", kind: entryMethod, on: fastapiApps, methods: []string{"add_api_route"},
		arg: 1, kws: []string{"endpoint"}, syncOnly: true, many: true,
		how: "FastAPI runs this plain def endpoint in its thread pool",
		ref: "https://fastapi.tiangolo.com/async/#path-operation-functions; fastapi/routing.py APIRouter.add_api_route → run_endpoint_function"},
	{id: "fastapi-depends", kind: entryCall,
		quals: []string{"fastapi.Depends", "fastapi.Security", "fastapi.param_functions.Depends", "fastapi.param_functions.Security"},
		arg:   0, kws: []string{"dependency"}, syncOnly: true, many: true,
		how: "FastAPI runs this plain def dependency in its thread pool",
		ref: "https://fastapi.tiangolo.com/async/#dependencies; fastapi/dependencies/utils.py solve_dependencies (run_in_threadpool unless a coroutine)"},
	{id: "starlette-route", kind: entryCall, quals: []string{"starlette.routing.Route"},
		arg: 1, kws: []string{"endpoint"}, syncOnly: true, many: true,
		how: "Starlette runs this plain def endpoint in its thread pool",
		ref: "starlette/routing.py request_response (functools.partial(run_in_threadpool, func) unless is_async_callable)"},
	{id: "starlette-streaming", kind: entryCall,
		quals: []string{"starlette.responses.StreamingResponse", "fastapi.responses.StreamingResponse",
			"sse_starlette.EventSourceResponse", "sse_starlette.sse.EventSourceResponse"},
		arg: 0, kws: []string{"content"}, iterates: true, syncOnly: true, many: true,
		how: "Starlette iterates this plain generator in its thread pool",
		ref: "starlette/responses.py StreamingResponse.__init__ (iterate_in_threadpool unless the content is an AsyncIterable; sse_starlette's EventSourceResponse likewise)"},
	{id: "iterate-in-threadpool", kind: entryCall,
		quals: []string{"starlette.concurrency.iterate_in_threadpool", "fastapi.concurrency.iterate_in_threadpool"},
		arg:   0, iterates: true,
		ref: "starlette/concurrency.py iterate_in_threadpool (each next() through anyio.to_thread.run_sync)"},
	{id: "background-task", kind: entryMethod,
		on:      []string{"fastapi.BackgroundTasks", "fastapi.background.BackgroundTasks", "starlette.background.BackgroundTasks"},
		methods: []string{"add_task"}, arg: 0, kws: []string{"func"}, syncOnly: true, many: true,
		how: "Starlette runs this plain def background task in its thread pool",
		ref: "https://fastapi.tiangolo.com/tutorial/background-tasks/; starlette/background.py BackgroundTask.__call__ (run_in_threadpool unless is_async)"},
	{id: "flask-route", kind: entryDecorator, on: flaskApps,
		methods: []string{"route", "get", "post", "put", "delete", "patch"}, many: true, offKw: "threaded",
		how: "Flask's threaded server runs this view on a thread per request",
		ref: "https://flask.palletsprojects.com/en/stable/api/#flask.Flask.run (threaded by default since 1.0: flask/app.py Flask.run, options.setdefault(\"threaded\", True))"},
	{id: "flask-add-url-rule", kind: entryMethod, on: flaskApps, methods: []string{"add_url_rule"},
		arg: 2, kws: []string{"view_func"}, many: true, offKw: "threaded",
		how: "Flask's threaded server runs this view on a thread per request",
		ref: "https://flask.palletsprojects.com/en/stable/api/#flask.Flask.add_url_rule; flask/app.py Flask.run (threaded by default since 1.0)"},
	{id: "django-path", kind: entryCall, quals: []string{"django.urls.path", "django.urls.re_path", "django.conf.urls.url"},
		arg: 1, kws: []string{"view"}, many: true,
		instance: []string{"dispatch", "get", "post", "put", "patch", "delete", "head", "options"}, // View.as_view()
		how:      "Django serves this view on a thread per request",
		ref:      "https://docs.djangoproject.com/en/stable/ref/django-admin/#cmdoption-runserver-nothreading (runserver is multithreaded by default; WSGI servers run threads too)"},

	// Threading servers of the standard library.
	{id: "socketserver-handler", kind: entrySubclass,
		quals:   []string{"socketserver.BaseRequestHandler", "socketserver.StreamRequestHandler", "socketserver.DatagramRequestHandler"},
		methods: []string{"setup", "handle", "finish"}, served: true, many: true,
		how: "a threading socketserver runs this handler on a thread per request",
		ref: "https://docs.python.org/3/library/socketserver.html#socketserver.ThreadingMixIn (process_request starts a thread that calls finish_request → the handler)"},
	{id: "http-server-handler", kind: entrySubclass,
		quals:   []string{"http.server.BaseHTTPRequestHandler", "http.server.SimpleHTTPRequestHandler", "http.server.CGIHTTPRequestHandler"},
		methods: []string{"setup", "handle", "finish"}, prefix: "do_", served: true, many: true,
		how: "a threading HTTP server runs this handler on a thread per request",
		ref: "https://docs.python.org/3/library/http.server.html#http.server.ThreadingHTTPServer (BaseHTTPRequestHandler.handle_one_request calls do_<command>)"},
	{id: "xmlrpc-register", kind: entryMethod, on: threadMixins,
		methods: []string{"register_function", "register_instance"}, arg: 0, kws: []string{"function", "instance"},
		instance: []string{"*"}, many: true,
		how: "a ThreadingMixIn XML-RPC server runs this on a thread per request",
		ref: "https://docs.python.org/3/library/xmlrpc.server.html#xmlrpc.server.SimpleXMLRPCServer.register_function; socketserver.ThreadingMixIn"},

	// RPC servers with thread pools.
	{id: "grpc-servicer", kind: entryServicer, on: []string{"grpc.server"}, instance: []string{"*"}, many: true,
		how: "grpc.server runs this servicer's methods in its thread pool",
		ref: "https://grpc.github.io/grpc/python/grpc.html#grpc.server (thread_pool: the executor that runs RPC handlers)"},
	{id: "torch-rpc", kind: entryCall,
		quals: []string{"torch.distributed.rpc.rpc_sync", "torch.distributed.rpc.rpc_async", "torch.distributed.rpc.remote"},
		arg:   1, kws: []string{"func"}, many: true,
		how: "torch.distributed.rpc runs this function on the callee's RPC thread pool",
		ref: "https://pytorch.org/docs/stable/rpc.html#torch.distributed.rpc.TensorPipeRpcBackendOptions (num_worker_threads: the pool that executes requests)"},

	// UI frameworks' worker threads.
	{id: "streamlit-cache-resource", kind: entryDecorated,
		quals: []string{"streamlit.cache_resource", "streamlit.experimental_singleton", "streamlit.singleton"},
		many:  true,
		how:   "Streamlit runs each rerun of the script on a new thread, and cache_resource hands what this makes to every later one",
		ref:   "streamlit/runtime/scriptrunner/script_runner.py ScriptRunner.start (a thread per script run); https://docs.streamlit.io/develop/api-reference/caching-and-state/st.cache_resource (shared across reruns and sessions)"},
	{id: "qthread-subclass", kind: entrySubclass, quals: qtCore("QThread"), methods: []string{"run"},
		how: "Qt runs this QThread subclass's run on its own thread",
		ref: "https://doc.qt.io/qt-6/qthread.html#run (start() calls run() in the new thread)"},
	{id: "qthread-started", kind: entryMethod, on: qtCore("QThread"), methods: []string{"connect"}, signal: "started",
		arg: 0, kws: []string{"slot"},
		how: "Qt runs this slot, connected to started, on the QThread's own thread",
		ref: "https://doc.qt.io/qt-6/qthread.html#details (the worker object moved to the thread with moveToThread, its slot connected to started)"},
	{id: "qthreadpool-start", kind: entryMethod, on: append(qtCore("QThreadPool"), qtCore("QThreadPool.globalInstance")...),
		methods: []string{"start", "tryStart"}, arg: 0, kws: []string{"runnable"}, instance: []string{"run"}, many: true,
		how: "QThreadPool runs this in its worker threads",
		ref: "https://doc.qt.io/qt-6/qthreadpool.html#start (the runnable's run() in a pool thread)"},
	{id: "gradio-interface", kind: entryCall,
		quals: []string{"gradio.Interface", "gradio.ChatInterface", "gradio.interface.Interface", "gradio.chat_interface.ChatInterface"},
		arg:   0, kws: []string{"fn"}, syncOnly: true,
		how: "Gradio runs this plain def function in a worker thread",
		ref: "gradio/blocks.py Blocks.call_function (anyio.to_thread.run_sync unless inspect.iscoroutinefunction)"},
	{id: "gradio-event", kind: entryMethod, on: []string{"gradio."},
		methods: []string{"click", "change", "input", "submit", "select", "upload", "load", "release", "blur", "focus",
			"clear", "stream", "play", "pause", "stop", "like", "edit", "tick", "then", "success"},
		arg: 0, kws: []string{"fn"}, syncOnly: true,
		how: "Gradio runs this plain def event handler in a worker thread",
		ref: "gradio/blocks.py Blocks.call_function (anyio.to_thread.run_sync unless inspect.iscoroutinefunction)"},
}

// The catalogue's indexes, made once when the package loads and never
// written after.
var (
	byQual      = indexEntries(func(e *threadEntry) []string { return callQuals(e) })
	byMethod    = indexEntries(func(e *threadEntry) []string { return kindMethods(e, entryMethod, entryLoopExecutor) })
	byDecorator = indexEntries(func(e *threadEntry) []string { return kindMethods(e, entryDecorator) })
	byBase      = indexEntries(func(e *threadEntry) []string { return kindQuals(e, entrySubclass) })
	byDecorated = indexEntries(func(e *threadEntry) []string { return kindQuals(e, entryDecorated) })
	// decoratedRoots are the packages of byDecorated's decorators.
	decoratedRoots = setOf(func(e *threadEntry) []string {
		var out []string
		for _, q := range kindQuals(e, entryDecorated) {
			root, _, _ := strings.Cut(q, ".")
			out = append(out, root)
		}
		return out
	})
	// executorTypes are the thread pools whose methods run callables in
	// other threads.
	executorTypes = setOf(func(e *threadEntry) []string { return kindQuals(e, entryPool) })
	// poolMethods run their first argument in a pool's threads;
	// manyMethods over several inputs at once.
	poolMethods = setOf(func(e *threadEntry) []string { return kindMethods(e, entryPool) })
	manyMethods = setOf(func(e *threadEntry) []string {
		if e.kind == entryPool {
			return e.mapping
		}
		return nil
	})
	// threadRunners run their first argument in a worker thread, with
	// the rest of their arguments after it.
	threadRunners = setOf(func(e *threadEntry) []string {
		if e.kind == entryCall && e.arg == 0 && len(e.kws) == 0 {
			return e.quals
		}
		return nil
	})
	// offKws are the keywords that, False on a run call, turn an entry off.
	offKws = setOf(func(e *threadEntry) []string {
		if e.offKw != "" {
			return []string{e.offKw}
		}
		return nil
	})
)

func callQuals(e *threadEntry) []string {
	return kindQuals(e, entryCall, entryPool, entryBackward)
}

func kindQuals(e *threadEntry, kinds ...entryKind) []string {
	for _, k := range kinds {
		if e.kind == k {
			return e.quals
		}
	}
	return nil
}

func kindMethods(e *threadEntry, kinds ...entryKind) []string {
	for _, k := range kinds {
		if e.kind == k {
			return e.methods
		}
	}
	return nil
}

func indexEntries(keys func(*threadEntry) []string) map[string][]int {
	out := map[string][]int{}
	for i := range threadCatalogue {
		for _, k := range keys(&threadCatalogue[i]) {
			out[k] = append(out[k], i)
		}
	}
	return out
}

func setOf(keys func(*threadEntry) []string) map[string]bool {
	out := map[string]bool{}
	for i := range threadCatalogue {
		for _, k := range keys(&threadCatalogue[i]) {
			out[k] = true
		}
	}
	return out
}

// isType reports whether qual is one of types: equal, or under a type
// ending in ".".
func isType(qual string, types []string) bool {
	if qual == "" {
		return false
	}
	for _, ty := range types {
		if qual == ty || strings.HasSuffix(ty, ".") && strings.HasPrefix(qual, ty) {
			return true
		}
	}
	return false
}

// instanceTypes are every type some entry asks instances of; a name bound
// to a call of one is remembered.
var instanceTypes = setOf(func(e *threadEntry) []string {
	switch e.kind {
	case entryMethod, entryDecorator, entryServicer:
		return e.on
	case entryPool:
		return e.quals
	}
	return nil
})

// instancePrefixes are the types of instanceTypes that stand for every
// name under them.
var instancePrefixes = func() []string {
	var out []string
	for ty := range instanceTypes {
		if strings.HasSuffix(ty, ".") {
			out = append(out, ty)
		}
	}
	return out
}()

// isInstanceType reports whether a constructor's qual makes an instance
// some entry asks about.
func isInstanceType(qual string) bool {
	return instanceTypes[qual] || isType(qual, instancePrefixes)
}

// isThreadingServer reports whether a class or constructor serves each
// request on a thread.
func isThreadingServer(qual string) bool {
	return isType(qual, threadingServers) || isType(qual, threadMixins)
}
