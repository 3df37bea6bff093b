import unittest

from weather.service import forecast


class ForecastTest(unittest.TestCase):
    def test_forecast_uses_configured_units(self):
        self.assertEqual(forecast("Oslo")["units"], "metric")


if __name__ == "__main__":
    unittest.main()
