-- POST a new item.
wrk.path = "/items"
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"name": "bench widget", "description": "made by wrk", "price_cents": 1999, "quantity": 3}'
