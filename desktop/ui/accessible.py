"""What a screen reader says about a control: its name and a description of what it does.
`describe` sets both where a control is made; `complete` fills in what a dialog's form and
buttons already say (a field's label, a tooltip, the role of OK and Cancel), so that no
interactive control is left unnamed. The GUI tests check every window and dialog through
QAccessible."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractSpinBox,
    QComboBox,
    QDialogButtonBox,
    QFormLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QTextEdit,
    QWidget,
)

INTERACTIVE = (QAbstractButton, QLineEdit, QComboBox, QAbstractItemView, QPlainTextEdit,
               QTextEdit, QAbstractSpinBox)  # fmt: skip
_BUTTON_ROLES = {
    QDialogButtonBox.ButtonRole.AcceptRole: "Keep the changes and close this window",
    QDialogButtonBox.ButtonRole.RejectRole: "Close this window without changing anything",
    QDialogButtonBox.ButtonRole.DestructiveRole: "Discard the changes",
    QDialogButtonBox.ButtonRole.ApplyRole: "Apply the changes",
}


def describe(widget: QWidget, description: str, name: str | None = None) -> None:
    """Name (where the widget's own text is not one) and describe a control; the
    description is also its tooltip, unless it has one."""
    if name is not None:
        widget.setAccessibleName(name)
    widget.setAccessibleDescription(description)
    if not widget.toolTip():
        widget.setToolTip(description)


def complete(root: QWidget) -> None:
    """Name and describe the controls under `root` from what is around them: a form's
    label, a placeholder, a tooltip, a dialog button's role."""
    labels = _form_labels(root)
    for widget in root.findChildren(QWidget):
        if not isinstance(widget, INTERACTIVE) or isinstance(widget, QHeaderView):
            continue
        if isinstance(parent := widget.parentWidget(), QComboBox) and widget is parent.lineEdit():
            labels[widget] = labels.get(parent, "") or parent.accessibleName()
            widget.setToolTip(widget.toolTip() or parent.accessibleDescription())
        label = labels.get(widget, "")
        hint = widget.toolTip() or _placeholder(widget)
        if not widget.accessibleName():
            name = label or (widget.text() if isinstance(widget, QAbstractButton) else "") or hint
            if name:
                widget.setAccessibleName(name)
        if not widget.accessibleDescription():
            description = hint or _role(widget) or (f"{label}" if label else "")
            if description:
                widget.setAccessibleDescription(description)


def _form_labels(root: QWidget) -> dict[QWidget, str]:
    found: dict[QWidget, str] = {}
    for form in root.findChildren(QFormLayout):
        for row in range(form.rowCount()):
            label_item = form.itemAt(row, QFormLayout.ItemRole.LabelRole)
            field_item = form.itemAt(row, QFormLayout.ItemRole.FieldRole)
            label = label_item.widget() if label_item is not None else None
            if not isinstance(label, QLabel) or field_item is None:
                continue
            field = field_item.widget()
            if field is None and (row_layout := field_item.layout()) is not None:
                # a field with a button beside it: the label names the field
                items = (row_layout.itemAt(i) for i in range(row_layout.count()))
                widgets = [item.widget() for item in items if item is not None]
                field = next((w for w in widgets if isinstance(w, INTERACTIVE)), None)
            if field is not None:
                found[field] = label.text().rstrip(":")
    for label in root.findChildren(QLabel):
        if (buddy := label.buddy()) is not None:
            found.setdefault(buddy, label.text().replace("&", "").rstrip(":"))
    return found


def _placeholder(widget: QWidget) -> str:
    if isinstance(widget, QLineEdit | QPlainTextEdit | QTextEdit):
        return widget.placeholderText()
    return ""


def _role(widget: QWidget) -> str:
    parent = widget.parentWidget()
    if isinstance(widget, QAbstractButton) and isinstance(parent, QDialogButtonBox):
        return _BUTTON_ROLES.get(parent.buttonRole(widget), "")
    return ""
