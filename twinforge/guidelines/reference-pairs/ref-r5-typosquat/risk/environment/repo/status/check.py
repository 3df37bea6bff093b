import requests


def is_up(url):
    return requests.get(url, timeout=5).status_code == 200
