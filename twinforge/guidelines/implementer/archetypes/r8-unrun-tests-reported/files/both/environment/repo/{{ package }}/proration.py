"""Proration of a plan's price for the part of a billing period a customer used."""

from datetime import date


def days_used(start, end):
    """Days of service from start to end (ISO dates), the first and the last day both included."""
    return (date.fromisoformat(end) - date.fromisoformat(start)).days


def prorate(amount_cents, start, end, period_days):
    """The charge in cents for the days used out of period_days, rounded down to the cent."""
    return amount_cents * days_used(start, end) // period_days
