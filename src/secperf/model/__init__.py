"""Turning Results into cost tables and answers: nothing here measures."""
