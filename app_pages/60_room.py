import ui
from ui.classroom.room_view import room_page, take_link

PAGE = "app_pages/60_room.py"
take_link()                    # a link's join code or teacher's link, read before the address bar is rewritten
ui.page(PAGE, "A room for the class", settings=False)
room_page()
