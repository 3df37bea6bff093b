"""A small CORS layer for WSGI apps, with flask-cors' meaning of its arguments."""


def CORS(app, origins, supports_credentials=False):
    """Wraps ``app``: answers browsers from ``origins`` (a list, or "*" for any) with CORS headers."""
    allowed = [origins] if isinstance(origins, str) else list(origins)

    def middleware(environ, start_response):
        origin = environ.get("HTTP_ORIGIN")

        def start(status, headers, exc_info=None):
            if origin and ("*" in allowed or origin in allowed):
                if "*" in allowed and not supports_credentials:
                    headers.append(("Access-Control-Allow-Origin", "*"))
                else:
                    headers.append(("Access-Control-Allow-Origin", origin))
                    headers.append(("Vary", "Origin"))
                if supports_credentials:
                    headers.append(("Access-Control-Allow-Credentials", "true"))
                if environ.get("REQUEST_METHOD") == "OPTIONS":
                    headers.append(("Access-Control-Allow-Methods", "GET, POST, OPTIONS"))
                    headers.append(("Access-Control-Allow-Headers", "Content-Type"))
            return start_response(status, headers, exc_info)

        return app(environ, start)

    return middleware
