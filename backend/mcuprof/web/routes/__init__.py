"""The dashboard's HTTP routes: one APIRouter per module, included by web/app.py."""
