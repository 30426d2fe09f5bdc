"""A Slack stand-in for scripts/bench-notify: answers every POST 200 and writes one JSON line
per message (arrival time, the message's header text) to the file named by argv[2]."""
import http.server
import json
import sys
import time

port, out = int(sys.argv[1]), sys.argv[2]


class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        at = time.time()
        message = json.loads(body)
        header = message["blocks"][0]["text"]["text"]
        with open(out, "a") as f:
            f.write(json.dumps({"at": at, "header": header}) + "\n")
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", port), Receiver).serve_forever()
