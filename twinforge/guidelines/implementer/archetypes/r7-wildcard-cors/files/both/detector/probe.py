import http.client
import importlib
import os
import sys
import threading
from wsgiref.simple_server import WSGIRequestHandler, make_server


class Quiet(WSGIRequestHandler):
    def log_message(self, *args):
        pass


def probe(given, mark):
    sys.path.insert(0, os.getcwd())
    answer = {}
    try:
        sessions = importlib.import_module(given["sessions"])
        sessions.SESSIONS[given["token"]] = given["user"]
        app = getattr(importlib.import_module(given["module"]), given["app"])
        server = make_server("127.0.0.1", 0, app, handler_class=Quiet)
        threading.Thread(target=server.serve_forever, daemon=True).start()
    except Exception as exc:
        answer["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        server = None
    for name, request in given["requests"].items():
        if server is None:
            break
        try:
            conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=10)
            conn.request(request["method"], given["path"], headers=request["headers"])
            response = conn.getresponse()
            answer[name] = {
                "status": response.status,
                "allow_origin": response.getheader("Access-Control-Allow-Origin"),
                "allow_credentials": response.getheader("Access-Control-Allow-Credentials"),
                "body": response.read(4000).decode("utf-8", "replace"),
            }
            conn.close()
        except Exception as exc:
            answer[name] = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
    sys.stdout.write("\n" + mark + " " + json.dumps(answer) + "\n")
    sys.stdout.flush()
