-- What each AgentDojo tool does, for the flow rule (issue 24): loaded by the BLOCK and APPROVE
-- modes of bench/flow_eval.py, before the mode's own plugin. One table for all four suites; a
-- name two suites share (send_email, the calendar tools) means the same thing in both.
--   UNTRUSTED_CONTENT  its results bring text someone outside wrote (mail received, shared files,
--                      invitations, reviews, web pages, messages, transaction subjects)
--   PRIVATE_DATA       its results bring, or its calls reach, the user's own data or accounts;
--                      a tool acting with the user's account (mail, calendar, bank, Slack,
--                      bookings in their name) carries it too
--   SENDS_OUT          its calls can carry data to a party outside (mail, invitations, payments,
--                      messages, shares, reservations, a visited or posted web address)
--   CHANGES_STATE      its calls change something
-- The travel suite's directory look-ups (hotels, restaurants, cars, flights) only read a
-- catalogue the travel service keeps: untrusted content, nothing private, nothing sent out.
-- An empty table declares no effect (a tool that declares nothing counts as having all four).
ID = "8b408b18-2ea3-4eeb-bb42-fc0f8b717813"
NAME = "AgentDojo bench - tool effects"
DESCRIPTION = "The effects of every AgentDojo tool (workspace, travel, banking, slack)."
VERSION = "1.0.0"
TYPE = "CONFIGURATION"
AUTHORS = { "toolpolicy bench" }
SUPPORT_CONTACT = "mailto:bench@example.org"
SOURCE_URL = "https://example.org/toolpolicy/bench"
CATEGORIES = { "CORE" }
TARGET_GROUPS = { "EVERYONE" }
IS_MAINTAINED = true
DEPRECATION_MESSAGE = ""
PRIORITY = 150

local READS_OUTSIDE = { "UNTRUSTED_CONTENT" }
local READS_PRIVATE = { "PRIVATE_DATA" }
local READS_PRIVATE_FROM_OUTSIDE = { "UNTRUSTED_CONTENT", "PRIVATE_DATA" }
local CHANGES_PRIVATE = { "PRIVATE_DATA", "CHANGES_STATE" }
local SENDS_PRIVATE = { "PRIVATE_DATA", "SENDS_OUT", "CHANGES_STATE" }

CONFIG = {}
CONFIG["SETTINGS"] = {}
CONFIG["SETTINGS"]["DataTools.ToolEffects"] = {
    -- workspace (and travel's mail and calendar)
    ["send_email"] = SENDS_PRIVATE,
    ["delete_email"] = CHANGES_PRIVATE,
    ["get_unread_emails"] = READS_PRIVATE_FROM_OUTSIDE,
    ["get_received_emails"] = READS_PRIVATE_FROM_OUTSIDE,
    ["get_sent_emails"] = READS_PRIVATE,
    ["get_draft_emails"] = READS_PRIVATE,
    ["search_emails"] = READS_PRIVATE_FROM_OUTSIDE,
    ["search_contacts_by_name"] = READS_PRIVATE,
    ["search_contacts_by_email"] = READS_PRIVATE,
    ["get_current_day"] = {},
    ["search_calendar_events"] = READS_PRIVATE_FROM_OUTSIDE,
    ["get_day_calendar_events"] = READS_PRIVATE_FROM_OUTSIDE,
    ["create_calendar_event"] = SENDS_PRIVATE,
    ["cancel_calendar_event"] = SENDS_PRIVATE,
    ["reschedule_calendar_event"] = SENDS_PRIVATE,
    ["add_calendar_event_participants"] = SENDS_PRIVATE,
    ["append_to_file"] = CHANGES_PRIVATE,
    ["search_files_by_filename"] = READS_PRIVATE_FROM_OUTSIDE,
    ["create_file"] = CHANGES_PRIVATE,
    ["delete_file"] = CHANGES_PRIVATE,
    ["get_file_by_id"] = READS_PRIVATE_FROM_OUTSIDE,
    ["list_files"] = READS_PRIVATE_FROM_OUTSIDE,
    ["share_file"] = SENDS_PRIVATE,
    ["search_files"] = READS_PRIVATE_FROM_OUTSIDE,
    -- travel
    ["get_user_information"] = READS_PRIVATE,
    ["get_all_hotels_in_city"] = READS_OUTSIDE,
    ["get_hotels_prices"] = READS_OUTSIDE,
    ["get_rating_reviews_for_hotels"] = READS_OUTSIDE,
    ["get_hotels_address"] = READS_OUTSIDE,
    ["get_all_restaurants_in_city"] = READS_OUTSIDE,
    ["get_cuisine_type_for_restaurants"] = READS_OUTSIDE,
    ["get_restaurants_address"] = READS_OUTSIDE,
    ["get_rating_reviews_for_restaurants"] = READS_OUTSIDE,
    ["get_dietary_restrictions_for_all_restaurants"] = READS_OUTSIDE,
    ["get_contact_information_for_restaurants"] = READS_OUTSIDE,
    ["get_price_for_restaurants"] = READS_OUTSIDE,
    ["check_restaurant_opening_hours"] = READS_OUTSIDE,
    ["get_all_car_rental_companies_in_city"] = READS_OUTSIDE,
    ["get_car_types_available"] = READS_OUTSIDE,
    ["get_rating_reviews_for_car_rental"] = READS_OUTSIDE,
    ["get_car_fuel_options"] = READS_OUTSIDE,
    ["get_car_rental_address"] = READS_OUTSIDE,
    ["get_car_price_per_day"] = READS_OUTSIDE,
    ["get_flight_information"] = READS_OUTSIDE,
    ["reserve_hotel"] = SENDS_PRIVATE,
    ["reserve_car_rental"] = SENDS_PRIVATE,
    ["reserve_restaurant"] = SENDS_PRIVATE,
    -- banking
    ["get_iban"] = READS_PRIVATE,
    ["get_balance"] = READS_PRIVATE,
    ["get_user_info"] = READS_PRIVATE,
    ["get_most_recent_transactions"] = READS_PRIVATE_FROM_OUTSIDE,
    ["get_scheduled_transactions"] = READS_PRIVATE_FROM_OUTSIDE,
    ["read_file"] = READS_PRIVATE_FROM_OUTSIDE,
    ["send_money"] = SENDS_PRIVATE,
    ["schedule_transaction"] = SENDS_PRIVATE,
    ["update_scheduled_transaction"] = SENDS_PRIVATE,
    ["update_password"] = CHANGES_PRIVATE,
    ["update_user_info"] = CHANGES_PRIVATE,
    -- slack
    -- channel names and member lists are written by anyone in the workspace
    ["get_channels"] = READS_PRIVATE_FROM_OUTSIDE,
    ["get_users_in_channel"] = READS_PRIVATE_FROM_OUTSIDE,
    ["read_channel_messages"] = READS_PRIVATE_FROM_OUTSIDE,
    ["read_inbox"] = READS_PRIVATE_FROM_OUTSIDE,
    ["add_user_to_channel"] = CHANGES_PRIVATE,
    ["remove_user_from_slack"] = CHANGES_PRIVATE,
    ["send_direct_message"] = SENDS_PRIVATE,
    ["send_channel_message"] = SENDS_PRIVATE,
    ["invite_user_to_slack"] = SENDS_PRIVATE,
    ["get_webpage"] = { "UNTRUSTED_CONTENT", "SENDS_OUT" },
    ["post_webpage"] = { "SENDS_OUT", "CHANGES_STATE" },
}
