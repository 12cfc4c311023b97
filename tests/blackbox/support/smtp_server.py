"""A real SMTP server on loopback for the email tests (aiosmtpd).

Usage: smtp_server.py DIR. Listens on a free port of 127.0.0.1, prints
"PORT <n>" once it accepts connections, and writes each message it accepts
decoded (headers, text and HTML parts) to DIR/<n>.json. Files in DIR steer it while it runs:

- DIR/refuse holds an SMTP code (451, 554, ...): every message is refused
  with it until the file is removed.
- DIR/delay holds seconds to wait before answering a message's DATA; a
  message whose client hung up meanwhile is not accepted (it was never
  acknowledged), as a real server would not deliver it.
"""

import asyncio
import email
import email.policy
import json
import os
import socket
import sys
import time

from aiosmtpd.controller import Controller


class Handler:
    def __init__(self, directory):
        self.directory = directory
        self.count = 0

    def read(self, name):
        try:
            with open(os.path.join(self.directory, name)) as f:
                return f.read().strip()
        except FileNotFoundError:
            return None

    async def handle_DATA(self, server, session, envelope):
        delay = self.read("delay")
        if delay:
            await asyncio.sleep(float(delay))
            transport = getattr(server, "transport", None)
            if transport is None or transport.is_closing():
                return "451 the client went away"
        refuse = self.read("refuse")
        if refuse:
            return f"{refuse} refused by the test server"
        self.count += 1
        name = f"{time.time_ns()}-{self.count}.eml"
        tmp = os.path.join(self.directory, name + ".tmp")
        raw = envelope.original_content or envelope.content
        message = email.message_from_bytes(raw, policy=email.policy.default)
        plain = message.get_body(("plain",))
        html = message.get_body(("html",))
        decoded = {
            "messageId": message["Message-ID"],
            "from": message["From"],
            "to": message["To"],
            "rcptTos": envelope.rcpt_tos,
            "subject": message["Subject"],
            "text": plain.get_content() if plain else "",
            "html": html.get_content() if html else "",
        }
        with open(tmp, "w") as f:
            json.dump(decoded, f)
        os.rename(tmp, os.path.join(self.directory, name.replace(".eml", ".json")))
        return "250 accepted"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    directory = sys.argv[1]
    os.makedirs(directory, exist_ok=True)
    port = free_port()
    controller = Controller(Handler(directory), hostname="127.0.0.1", port=port)
    controller.start()
    print(f"PORT {port}", flush=True)
    try:
        sys.stdin.read()
    finally:
        controller.stop()


if __name__ == "__main__":
    main()
