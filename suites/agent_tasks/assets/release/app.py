def handler(request: dict) -> dict:
    return {"status": 200, "body": "ok"}
