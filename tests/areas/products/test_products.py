"""Products behave as the interface document says."""

from __future__ import annotations


def test_create_product_needs_only_a_name(api):
    product = api.post("/v1/products", json={"name": "Mug"}).json()["product"]
    assert product["name"] == "Mug" and product["id"].startswith("prd_")
    assert product["id"] in {p["id"] for p in api.walk("/v1/products", "products")}


def test_create_product_without_a_name_is_refused(api):
    response = api.post("/v1/products", json={"description": "no name"})
    assert response.status_code == 400
    assert response.json()["details"]["errors"][0]["path"] == "/name"
