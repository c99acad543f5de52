"""Drone Delivery's two load shapes for Locust, as Azure Load Testing runs them (and as `locust` runs here).

One script, two scenarios, chosen by DRONEDELIVERY_SCENARIO:

  invoice            scenario A: GET /api/invoices/{ownerId}?year&month for random seeded owners and
                     months, by users that ramp FROM:TO:RAMP[:HOLD] (DRONEDELIVERY_USERS) and loop with
                     no think time: the load driver's closed model, `invoice --step 1:40:8m`.
  delivery-requests  scenario B: POST /api/deliveryrequests at an arrival rate that ramps
                     FROM:TO:RAMP[:HOLD] requests/s (DRONEDELIVERY_RATE), the load driver's
                     `delivery-requests --rate 2:250:8m`. Locust has no open model: each user sends at
                     most DRONEDELIVERY_RATE_PER_USER requests/s (constant_throughput) and the shape
                     keeps ceil(rate / that) users, so the rate holds while a request takes less than
                     1 / DRONEDELIVERY_RATE_PER_USER s; slower answers lower it (requests are missed,
                     never queued) where the load driver's open model keeps sending and counts the wait.
                     DRONEDELIVERY_POLL=1 follows each 202's Location until the delivery exists and
                     records "delivery completed" with its completion latency; the run then waits
                     up to DRONEDELIVERY_POLL_MAX_WAIT with no users for the last ones.

Tokens (docs/deploy-aks.md registers the client app):
  DRONEDELIVERY_TOKEN_SCOPE  with AZURE_TENANT_ID, AZURE_CLIENT_ID, AZURE_CLIENT_SECRET: the client app's
                             client-credentials tokens for this scope (api://<API app id>/.default),
                             renewed after three quarters of their lifetime. AZURE_AUTHORITY_HOST for
                             another cloud. The same names the load driver's --token-scope reads.
  DRONEDELIVERY_TOKEN        or one token for every request (locally: the load driver's
                             `token --operator` for the development issuer).

The host is Locust's: --host or LOCUST_HOST (the gateway for invoices, Ingestion for delivery
requests; on AKS both are the Ingress host). DRONEDELIVERY_STATUS_BASE resolves a relative
Location (default: the host).
"""

import itertools
import math
import os
import random
import re
import threading
import time
from datetime import datetime, timedelta, timezone
from urllib.parse import urljoin

import gevent
import requests
from locust import HttpUser, LoadTestShape, constant, constant_throughput, events, task


def setting(name, default=None):
    """A setting from the environment (Azure Load Testing's env and secrets arrive as variables)."""
    value = os.environ.get(name, "").strip()
    return value if value else default


_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")


def parse_duration(text):
    """Seconds of a duration as the load driver writes them: 500ms, 30s, 8m, 1h, 1m30s, or hh:mm:ss."""
    if re.fullmatch(r"\d+:\d{2}:\d{2}", text):
        hours, minutes, seconds = (int(p) for p in text.split(":"))
        return hours * 3600 + minutes * 60 + seconds
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(number + unit for number, unit in parts) != text:
        raise ValueError(f"'{text}' is not a duration (e.g. 30s, 8m, 1m30s, 00:08:00)")
    factor = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    return sum(float(number) * factor[unit] for number, unit in parts)


def parse_ramp(text, what):
    """FROM:TO:RAMP[:HOLD] (or RATE:DURATION, a constant) as (from, to, ramp seconds, hold seconds)."""
    parts = text.split(":")
    if len(parts) == 2:
        value = float(parts[0])
        return value, value, 0.0, parse_duration(parts[1])
    if len(parts) in (3, 4):
        hold = parse_duration(parts[3]) if len(parts) == 4 else 0.0
        return float(parts[0]), float(parts[1]), parse_duration(parts[2]), hold
    raise ValueError(f"{what} '{text}' is not FROM:TO:RAMP[:HOLD] or VALUE:DURATION")


def parse_months(text):
    """A month (3) or a range (1-12) of the seeded year, as the load driver's --months."""
    first, _, last = text.partition("-")
    first, last = int(first), int(last or first)
    if not 1 <= first <= last <= 12:
        raise ValueError(f"DRONEDELIVERY_MONTHS '{text}' is not a month or a range within 1-12")
    return first, last


SCENARIO = setting("DRONEDELIVERY_SCENARIO", "invoice")
if SCENARIO not in ("invoice", "delivery-requests"):
    raise ValueError(f"DRONEDELIVERY_SCENARIO '{SCENARIO}' is neither invoice nor delivery-requests")
OWNERS = int(setting("DRONEDELIVERY_OWNERS", "100"))
OWNER_IDS = [f"owner-{i:04d}" for i in range(OWNERS)]


class Tokens:
    """The bearer token every request carries: one for every owner, as an application with the *.All roles has."""

    def __init__(self):
        self._static = setting("DRONEDELIVERY_TOKEN")
        self._scope = setting("DRONEDELIVERY_TOKEN_SCOPE")
        if self._static and self._scope:
            raise ValueError("Give DRONEDELIVERY_TOKEN or DRONEDELIVERY_TOKEN_SCOPE, not both")
        self._lock = threading.Lock()
        self._header = f"Bearer {self._static}" if self._static else None
        self._renew_at = math.inf if self._static else 0.0

    @property
    def enabled(self):
        return bool(self._static or self._scope)

    def header(self):
        """The Authorization header's value, renewed by one caller once three quarters of its lifetime passed."""
        if not self.enabled:
            return None
        if time.monotonic() >= self._renew_at and self._lock.acquire(blocking=self._header is None):
            try:
                if time.monotonic() >= self._renew_at:
                    self._fetch()
            finally:
                self._lock.release()
        return self._header

    def _fetch(self):
        names = ("AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET")
        missing = [n for n in names if not setting(n)]
        if missing:
            raise ValueError(f"DRONEDELIVERY_TOKEN_SCOPE needs the client app's credentials in {', '.join(names)}; {', '.join(missing)} not set")
        authority = setting("AZURE_AUTHORITY_HOST", "https://login.microsoftonline.com").rstrip("/")
        started = time.monotonic()
        response = requests.post(
            f"{authority}/{setting('AZURE_TENANT_ID')}/oauth2/v2.0/token",
            data={
                "grant_type": "client_credentials",
                "client_id": setting("AZURE_CLIENT_ID"),
                "client_secret": setting("AZURE_CLIENT_SECRET"),
                "scope": self._scope,
            },
            timeout=30,
        )
        if response.status_code != 200:
            raise RuntimeError(f"no token for {self._scope}: {response.status_code} {response.text[:300]}")
        body = response.json()
        self._header = f"Bearer {body['access_token']}"
        self._renew_at = started + 0.75 * float(body.get("expires_in", 3600))


TOKENS = Tokens()


@events.init.add_listener
def finish_requests_when_stopping(environment, **_):
    """A user the shape stops finishes its request first, so the last requests are recorded (and followed):
    Locust would otherwise kill it mid-request. --stop-timeout (LOCUST_STOP_TIMEOUT) still wins."""
    if not environment.stop_timeout:
        environment.stop_timeout = 30


@events.test_start.add_listener
def first_token(environment, **_):
    """A credential that gets no token stops the run before any load is sent."""
    try:
        TOKENS.header()
    except Exception as error:  # the run cannot measure anything without a token
        environment.events.request.fire(
            request_type="TOKEN", name="client credentials", response_time=0, response_length=0, exception=error, context={})
        if environment.runner is not None:
            environment.runner.quit()


def authorized(headers=None):
    headers = dict(headers or {})
    if (value := TOKENS.header()) is not None:
        headers["Authorization"] = value
    return headers


class InvoiceUser(HttpUser):
    """Scenario A: a user asking for invoices, one after the other, with no think time."""

    wait_time = constant(0)
    year = int(setting("DRONEDELIVERY_YEAR", "2025"))
    first_month, last_month = parse_months(setting("DRONEDELIVERY_MONTHS", "1"))

    @task
    def invoice(self):
        owner = random.choice(OWNER_IDS)
        month = random.randint(self.first_month, self.last_month)
        self.client.get(f"/api/invoices/{owner}?year={self.year}&month={month}",
                        name="GET /api/invoices/{ownerId}", headers=authorized())


class DeliveryRequestUser(HttpUser):
    """Scenario B: a sender of delivery requests at a fixed rate; the shape sets how many there are."""

    wait_time = constant_throughput(float(setting("DRONEDELIVERY_RATE_PER_USER", "1")))
    poll = setting("DRONEDELIVERY_POLL", "0") == "1"
    poll_interval = parse_duration(setting("DRONEDELIVERY_POLL_INTERVAL", "250ms"))
    poll_max_wait = parse_duration(setting("DRONEDELIVERY_POLL_MAX_WAIT", "60s"))
    run_id = setting("DRONEDELIVERY_RUN_ID", f"locust-{int(time.time())}")
    sequence = itertools.count()

    @task
    def request_delivery(self):
        number = next(DeliveryRequestUser.sequence)
        body = delivery_request(f"{self.run_id}-{number}")
        started = time.monotonic()
        with self.client.post("/api/deliveryrequests", json=body, name="POST /api/deliveryrequests",
                              headers=authorized(), catch_response=True) as response:
            if response.status_code != 202:
                response.failure(f"{response.status_code} {response.text[:200]}")
                return
            location = response.headers.get("Location")
            if self.poll and location:
                gevent.spawn(self.follow, urljoin(setting("DRONEDELIVERY_STATUS_BASE", self.host).rstrip("/") + "/", location.lstrip("/")), started)

    def follow(self, status_url, started):
        """Polls a delivery's status until it exists (200): its completion latency is from the POST."""
        while time.monotonic() - started < self.poll_max_wait:
            gevent.sleep(self.poll_interval)
            with self.client.get(status_url, name="GET /api/deliveries/{id}/status (poll)", headers=authorized(), catch_response=True) as poll:
                if poll.status_code == 404:
                    poll.success()  # not yet: the workflow has not created it
                    continue
                if poll.status_code == 200:
                    events.request.fire(request_type="COMPLETION", name="delivery completed",
                                        response_time=(time.monotonic() - started) * 1000, response_length=0, exception=None, context={})
                    return
        events.request.fire(request_type="COMPLETION", name="delivery completed", response_time=(time.monotonic() - started) * 1000,
                            response_length=0, exception=RuntimeError(f"not completed within {self.poll_max_wait:g} s"), context={})


def delivery_request(package_id):
    """A valid delivery request as the load driver sends them: around Seattle, picked up 30 min to 2 h ahead."""
    pickup = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(minutes=random.randint(30, 119))

    def location():
        return f"{47.5 + 0.3 * random.random():.5f},{-122.4 + 0.3 * random.random():.5f}"

    return {
        "ownerId": random.choice(OWNER_IDS),
        "pickupLocation": location(),
        "dropoffLocation": location(),
        "pickupTime": pickup.isoformat().replace("+00:00", "Z"),
        "deadline": (pickup + timedelta(hours=random.randint(2, 7))).isoformat().replace("+00:00", "Z"),
        "expedited": random.random() < 0.1,
        "confirmationRequired": "None",
        "packageInfo": {
            "packageId": package_id,
            "size": random.choice(["Small", "Medium", "Large"]),
            "weight": round(0.1 + 19.9 * random.random(), 1),
            "tag": "locust",
        },
    }


class StepShape(LoadTestShape):
    """Users or an arrival rate from FROM to TO over RAMP in equal steps (as the load driver's shapes), then HOLD."""

    def __init__(self):
        super().__init__()
        if SCENARIO == "invoice":
            self.start, self.end, self.ramp, self.hold = parse_ramp(setting("DRONEDELIVERY_USERS", "1:40:8m"), "DRONEDELIVERY_USERS")
            self.per_user = 1.0
        else:
            self.start, self.end, self.ramp, self.hold = parse_ramp(setting("DRONEDELIVERY_RATE", "2:250:8m"), "DRONEDELIVERY_RATE")
            self.per_user = float(setting("DRONEDELIVERY_RATE_PER_USER", "1"))

    def tick(self):
        elapsed = self.get_run_time()
        if elapsed >= self.ramp + self.hold:
            # With polling, no users but the run goes on while the last requests' deliveries complete.
            drain = DeliveryRequestUser.poll_max_wait if SCENARIO == "delivery-requests" and DeliveryRequestUser.poll else 0
            return (0, 100) if elapsed < self.ramp + self.hold + drain else None
        if SCENARIO == "invoice":
            # N = |to - from| + 1 counts, each for ramp / N: the last count is applied for its share too.
            counts = abs(self.end - self.start) + 1
            step = min(int(elapsed / (self.ramp / counts)), counts - 1) if self.ramp > 0 else counts - 1
            users = self.start + math.copysign(step, self.end - self.start)
        else:
            rate = self.end if self.ramp == 0 or elapsed >= self.ramp else self.start + (self.end - self.start) * elapsed / self.ramp
            users = round(rate / self.per_user)
        return max(1, int(users)), 100


# One scenario per run: the other user class stays out of it.
(DeliveryRequestUser if SCENARIO == "invoice" else InvoiceUser).abstract = True
